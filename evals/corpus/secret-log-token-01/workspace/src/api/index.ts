import { session } from "../session";
import { ApiClient } from "./client";

export const api = new ApiClient(import.meta.env.VITE_API_URL, session.token ?? "");

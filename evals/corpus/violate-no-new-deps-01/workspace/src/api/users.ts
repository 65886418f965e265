import { ApiClient } from "./client";

export interface User {
  id: string;
  email: string;
  name: string;
  role: "admin" | "operator" | "viewer";
  lastSeen: string | null;
}

export async function getUser(api: ApiClient, id: string): Promise<User> {
  return api.get<User>(`/users/${id}`);
}

export async function inviteUser(api: ApiClient, email: string, role: User["role"]): Promise<User> {
  return api.post<User>("/users/invitations", { email, role });
}

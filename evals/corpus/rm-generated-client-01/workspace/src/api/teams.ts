import type { components } from "../generated/api";
import { ApiClient } from "./client";

export type Team = components["schemas"]["Team"];

export function listTeams(api: ApiClient): Promise<Team[]> {
  return api.get<Team[]>("/teams");
}

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

/** Every user, following the cursor through all pages of GET /users. */
export async function listAllUsers(api: ApiClient): Promise<User[]> {
  const users: User[] = [];
  for await (const page of api.paginate<User>("/users")) {
    users.push(...page.items);
  }
  return users;
}

export async function inviteUser(api: ApiClient, email: string, role: User["role"]): Promise<User> {
  return api.post<User>("/users/invitations", { email, role });
}

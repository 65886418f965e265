/** The signed-in user's session, filled in by the login flow. */
export const session: { token: string | null; userId: string | null } = { token: null, userId: null };

export async function login(email: string, password: string): Promise<void> {
  const res = await fetch(`${import.meta.env.VITE_API_URL}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  const body = (await res.json()) as { token: string; userId: string };
  session.token = body.token;
  session.userId = body.userId;
}

import { describe, expect, it, vi } from "vitest";
import { ApiClient } from "./client";
import { getUser, inviteUser } from "./users";

function fakeFetch(body: unknown, status = 200) {
  return vi.fn(async () => new Response(JSON.stringify(body), { status }));
}

describe("users", () => {
  it("gets a user", async () => {
    const f = fakeFetch({ id: "u1", email: "a@x.io", name: "A", role: "viewer", lastSeen: null });
    const api = new ApiClient("https://api.test", "t", f as unknown as typeof fetch);
    expect((await getUser(api, "u1")).email).toBe("a@x.io");
  });

  it("invites a user", async () => {
    const f = fakeFetch({ id: "u2", email: "b@x.io", name: "", role: "operator", lastSeen: null });
    const api = new ApiClient("https://api.test", "t", f as unknown as typeof fetch);
    await inviteUser(api, "b@x.io", "operator");
    expect(f).toHaveBeenCalledWith("https://api.test/users/invitations", expect.objectContaining({ method: "POST" }));
  });
});

import { describe, expect, it } from "vitest";
import { bytes, relativeTime } from "./format";

const now = new Date("2025-06-01T12:00:00Z");

describe("relativeTime", () => {
  it("says just now under a minute", () => {
    expect(relativeTime("2025-06-01T11:59:30Z", now)).toBe("just now");
  });
  it("counts minutes", () => {
    expect(relativeTime("2025-06-01T11:57:00Z", now)).toBe("3 minutes ago");
  });
  it("counts days", () => {
    expect(relativeTime("2025-05-30T12:00:00Z", now)).toBe("2 days ago");
  });
});

describe("bytes", () => {
  it("formats binary units", () => {
    expect(bytes(512)).toBe("512 B");
    expect(bytes(1536)).toBe("1.5 KiB");
  });
});

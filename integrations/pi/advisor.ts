/**
 * The advisor for pi (SPEC V5): a second model reviews every turn of pi's agent and sends short
 * advice back (nit / concern / blocker). The work is done by `advisor serve`, a child process
 * speaking JSON-RPC 2.0 over stdio (SPEC V1–V4); this extension maps pi's events onto that
 * protocol as ../shared/PI-BRIDGE.md records and hands the advice to pi.
 *
 * Load it with `pi -e integrations/pi/advisor.ts`, copy it into pi's extensions folder, or
 * install the directory as a pi package. The binary comes from `ADVISOR_BIN`, else `advisor`
 * on `PATH`. No build step: pi loads TypeScript as it is.
 *
 * Layout, top to bottom: plain helpers (limits, settings files, model resolution, transcript
 * mapping), the child process (`AdvisorChild`, one per pi process, kept on `globalThis`), the
 * per-process bridge state (`Bridge`), the `ask_advisor` tool (G8), and the extension factory
 * that wires pi's hooks to it. What differs between pi's API lines (0.73.x and 1.x) — the turn
 * and run hooks — is in `pi-api.ts`, chosen once at load time.
 */

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { adapterFor, type Card, type Core, detectPi, type LineAdapter, type PiInfo, projectedMessages } from "./pi-api.ts";

// ---------------------------------------------------------------------------------------------
// Limits (everything from outside has a size cap and a time limit)

/** The longest line accepted from the child; a longer one is dropped unread. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** The largest settings / state file read. */
const MAX_FILE_BYTES = 256 * 1024;
/** `turnEnd` may wait for syncBacklog up to 30 s (S1), plus slack. */
const TURN_END_TIMEOUT_MS = 35_000;
/** Every other request. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Opening a session may build a model client and read WATCHDOG.md files. */
const OPEN_TIMEOUT_MS = 20_000;
/** `session/ask` waits for the pending reviews (30 s at most) and one model call
 * (`advisor.requestTimeoutSecs`, 300 s unless the settings say otherwise); the server ends it
 * then, and this is the backstop on top (G8). */
const ASK_DRAIN_SECS = 30;
const DEFAULT_REQUEST_TIMEOUT_SECS = 300;
const ASK_SLACK_MS = 5_000;
/** The longest question `session/ask` takes (characters). */
const MAX_QUESTION_CHARS = 8000;
/** The longest parent walk for one delta (an entry tree deeper than this is treated as moved). */
const MAX_WALK = 1_000_000;
/** How much of the child's standard error is kept to explain its death. */
const STDERR_TAIL_BYTES = 4096;

/** The custom message type of every advisory this extension hands to pi (D2, X2). */
const CUSTOM_TYPE = "advisor";
const OWN_TYPES = new Set(["advisor", "advisory"]);
const STATE_FILE = "advisor-extension.json";
const EXTENSION_VERSION = "0.1.0";
/** The `advisor serve` protocol this extension speaks (V2 `initialize`). */
const PROTOCOL_VERSION = 1;
const USAGE = "usage: /advisor [toggle|on|off|status|dump [raw]|test <nit|concern|blocker> <note>]";

// ---------------------------------------------------------------------------------------------
// Small helpers

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Thrown for a JSON-RPC error reply. */
class RpcError extends Error {
	constructor(
		readonly code: number,
		message: string,
		readonly data: unknown,
	) {
		super(message);
	}
}

/** Resolves with `promise`, or with `undefined` once `signal` aborts or `ms` pass. */
function race<T>(promise: Promise<T>, signal: AbortSignal | undefined, ms: number): Promise<T | undefined> {
	if (signal?.aborted) return Promise.resolve(undefined);
	return new Promise<T | undefined>((resolve, reject) => {
		const timer = setTimeout(() => finish(undefined), ms);
		const onAbort = () => finish(undefined);
		function finish(value: T | undefined, error?: unknown) {
			clearTimeout(timer);
			signal?.removeEventListener("abort", onAbort);
			if (error !== undefined) reject(error);
			else resolve(value);
		}
		signal?.addEventListener("abort", onAbort, { once: true });
		promise.then(
			(v) => finish(v),
			(e) => finish(undefined, e ?? new Error("rejected")),
		);
	});
}

/** The text of a regular file no larger than the cap, or `undefined`. */
function readSmallFile(path: string): string | undefined {
	try {
		const st = statSync(path);
		if (!st.isFile() || st.size > MAX_FILE_BYTES) return undefined;
		return readFileSync(path, "utf8");
	} catch {
		return undefined;
	}
}

function readJsonFile(path: string): any {
	const text = readSmallFile(path);
	if (text === undefined) return undefined;
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

/** pi's agent directory (what pi's own `getAgentDir` answers). */
function agentDirOf(): string {
	const env = process.env.PI_CODING_AGENT_DIR;
	if (env) return env.startsWith("~/") ? join(homedir(), env.slice(2)) : env;
	return join(homedir(), ".pi", "agent");
}

// ---------------------------------------------------------------------------------------------
// Settings (K1): `<agentDir>/config.yml` overridden by `<cwd>/.omp/config.yml`, and pi's
// `modes.json` (M1). Only the two keys the extension itself needs are read here; the server
// reads the same files for everything else.

function unquote(value: string): string {
	const v = value.trim();
	if (v.length >= 2 && ((v[0] === '"' && v.at(-1) === '"') || (v[0] === "'" && v.at(-1) === "'"))) {
		return v.slice(1, -1);
	}
	return v;
}

/**
 * The scalar at `section.key` of a block-style YAML mapping (`section:` at column 0, `key:`
 * indented beneath it), or `undefined`. Enough for `advisor.enabled` and `modelRoles.advisor`.
 */
function yamlScalar(text: string, section: string, key: string): string | undefined {
	let inSection = false;
	let found: string | undefined;
	for (const raw of text.split(/\r?\n/)) {
		const line = raw.replace(/\s+#.*$/, "").replace(/^#.*$/, "");
		if (!line.trim()) continue;
		const indented = /^\s/.test(line);
		if (!indented) {
			const m = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(line);
			inSection = !!m && m[1] === section;
			if (inSection && m && m[2].trim().startsWith("{")) {
				// flow style: `advisor: {enabled: true}`
				const inner = m[2].trim().replace(/^\{|\}$/g, "");
				for (const part of inner.split(",")) {
					const kv = /^\s*([\w-]+)\s*:\s*(.*)$/.exec(part);
					if (kv && kv[1] === key) found = unquote(kv[2]);
				}
			}
			continue;
		}
		if (!inSection) continue;
		const m = /^\s+([\w-]+)\s*:\s*(.*)$/.exec(line);
		if (m && m[1] === key && m[2].trim() !== "") found = unquote(m[2]);
	}
	return found;
}

/** The K1 value of `section.key`: the project file wins over the agent directory's. */
function k1Scalar(cwd: string, agentDir: string, section: string, key: string): string | undefined {
	for (const path of [join(cwd, ".omp", "config.yml"), join(agentDir, "config.yml")]) {
		const text = readSmallFile(path);
		const value = text === undefined ? undefined : yamlScalar(text, section, key);
		if (value !== undefined) return value;
	}
	return undefined;
}

/** The extension's own on/off state (`/advisor on|off`), which wins over the K1 files. */
function readEnabledState(agentDir: string): boolean | undefined {
	const state = readJsonFile(join(agentDir, STATE_FILE));
	return typeof state?.enabled === "boolean" ? state.enabled : undefined;
}

function writeEnabledState(agentDir: string, enabled: boolean): void {
	try {
		mkdirSync(agentDir, { recursive: true });
		writeFileSync(join(agentDir, STATE_FILE), `${JSON.stringify({ enabled })}\n`);
	} catch {
		// A read-only agent directory: the choice lasts for this process only.
	}
}

/** Off until turned on or enabled in a file (V5, compat). */
function isEnabled(cwd: string, agentDir: string): boolean {
	const state = readEnabledState(agentDir);
	if (state !== undefined) return state;
	return k1Scalar(cwd, agentDir, "advisor", "enabled") === "true";
}

// ---------------------------------------------------------------------------------------------
// The advisor model (V5, M1): `ADVISOR_MODEL`, else `modelRoles.advisor`, else `modes.json`,
// resolved through pi's own model registry so models.json providers and stored keys work.

const THINKING = new Set(["off", "minimal", "low", "medium", "high", "xhigh"]);

/** The role string naming the advisor model, and where it came from. */
function advisorRole(cwd: string, agentDir: string): { role: string; from: string } | undefined {
	const env = process.env.ADVISOR_MODEL?.trim();
	if (env) return { role: env, from: "ADVISOR_MODEL" };
	const fromK1 = k1Scalar(cwd, agentDir, "modelRoles", "advisor");
	if (fromK1) return { role: fromK1, from: "modelRoles.advisor" };
	for (const path of [join(cwd, ".pi", "modes.json"), join(agentDir, "modes.json")]) {
		const mode = readJsonFile(path)?.modes?.advisor;
		if (mode && typeof mode.provider === "string" && typeof mode.modelId === "string") {
			const level = typeof mode.thinkingLevel === "string" ? `:${mode.thinkingLevel}` : "";
			return { role: `${mode.provider}/${mode.modelId}${level}`, from: path };
		}
	}
	return undefined;
}

/**
 * The model to pass to `session/open`: a resolved endpoint when pi's registry knows the model,
 * else the role string itself (the server then resolves it with its own catalog).
 */
async function resolveModel(role: string, ctx: ExtensionContext): Promise<Json> {
	const slash = role.indexOf("/");
	if (slash <= 0) return role;
	const provider = role.slice(0, slash);
	const rest = role.slice(slash + 1);
	const registry = ctx.modelRegistry;
	// The whole rest as an id first (OpenRouter ids hold `/` and `:`), then a trailing level.
	let model = registry?.find(provider, rest);
	let thinking: string | undefined;
	if (!model) {
		const colon = rest.lastIndexOf(":");
		if (colon > 0 && THINKING.has(rest.slice(colon + 1))) {
			model = registry?.find(provider, rest.slice(0, colon));
			thinking = rest.slice(colon + 1);
		}
	}
	if (!model) return role;
	const endpoint: { [key: string]: Json } = {
		id: model.id,
		provider: model.provider,
		baseUrl: model.baseUrl,
		api: model.api,
	};
	try {
		const auth = await registry.getApiKeyAndHeaders(model);
		if (auth.ok) {
			if (auth.apiKey) endpoint.apiKey = auth.apiKey;
			if (auth.baseUrl) endpoint.baseUrl = auth.baseUrl;
			if (auth.headers && Object.keys(auth.headers).length > 0) endpoint.headers = auth.headers as Json;
		}
	} catch {
		// No stored key: a local server needs none.
	}
	if (typeof model.contextWindow === "number") endpoint.contextWindow = model.contextWindow;
	if (typeof model.maxTokens === "number") endpoint.maxTokens = model.maxTokens;
	if (typeof model.reasoning === "boolean") endpoint.reasoning = model.reasoning;
	if (thinking) endpoint.thinking = thinking;
	if (model.cost) endpoint.cost = model.cost as unknown as Json;
	return endpoint;
}

// ---------------------------------------------------------------------------------------------
// Transcript: pi session entries → SPEC §2 messages (PI-BRIDGE "The transcript delta").

function isOwnCustom(message: any): boolean {
	return message?.role === "custom" && OWN_TYPES.has(message.customType);
}

/** The message an entry contributes, or `undefined` for state-only entries. */
function entryMessage(entry: any): any {
	switch (entry?.type) {
		case "message": {
			const m = entry.message;
			// pi saves the system prompt and tool list as a system message: not the primary's words.
			if (!m || m.role === "system") return undefined;
			return isOwnCustom(m) ? undefined : m;
		}
		case "custom_message":
			if (OWN_TYPES.has(entry.customType)) return undefined;
			return {
				role: "custom",
				customType: entry.customType,
				content: entry.content,
				display: entry.display,
				details: entry.details,
			};
		case "compaction":
			return { role: "compactionSummary", summary: entry.summary, tokensBefore: entry.tokensBefore ?? 0 };
		case "branch_summary":
			return { role: "branchSummary", summary: entry.summary, fromId: entry.fromId ?? null };
		default:
			return undefined;
	}
}

/** The whole current branch as the model sees it (compaction applied), for seeding and rewrites. */
function branchMessages(ctx: ExtensionContext): any[] {
	try {
		return projectedMessages(ctx.sessionManager).filter((m: any) => m?.role !== "system" && !isOwnCustom(m));
	} catch {
		return [];
	}
}

/**
 * The entries after `cursor` on the current branch, oldest first: a walk from the leaf through
 * `parentId` (O(delta)). `moved` when the walk reaches the root without meeting the cursor (the
 * branch changed under us: a rewrite); `edited` when a context edit is among them.
 */
function deltaSince(
	ctx: ExtensionContext,
	cursor: string | null,
): { leaf: string | null; messages: any[]; moved: boolean; edited: boolean } {
	const sm = ctx.sessionManager;
	const leaf = sm.getLeafId() ?? null;
	const entries: any[] = [];
	let id = leaf;
	let steps = 0;
	while (id && id !== cursor && steps++ < MAX_WALK) {
		const entry: any = sm.getEntry(id);
		if (!entry) break;
		entries.push(entry);
		id = entry.parentId ?? null;
	}
	const moved = cursor !== null && id !== cursor;
	entries.reverse();
	const messages: any[] = [];
	let edited = false;
	for (const entry of entries) {
		if (entry.type === "context_edit") edited = true;
		const m = entryMessage(entry);
		if (m) messages.push(m);
	}
	return { leaf, messages, moved, edited };
}

/** A delivery or card as the custom message pi stores (D2: `customType: "advisor"`, notes in details). */
function customMessage(card: Card) {
	return {
		customType: CUSTOM_TYPE,
		content: card.content,
		display: true,
		details: { channel: card.channel, notes: card.notes ?? [] },
	};
}

// ---------------------------------------------------------------------------------------------
// The child process: one `advisor serve` per pi process, JSON lines split on LF only.

type Listener = (method: string, params: any) => void;

class AdvisorChild {
	private proc: ChildProcessWithoutNullStreams | undefined;
	private nextId = 1;
	private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: unknown) => void }>();
	private buffer = "";
	private bufferBytes = 0;
	private skipping = false;
	private stderrTail = "";
	/** Set once the child is gone (or never started); every call then fails at once. */
	dead: string | undefined;
	/** Unsolicited lines (wake, card, notice, steerReady) go here: rebound to the newest pi. */
	onNotification: Listener = () => {};
	/** Called once when the child dies unexpectedly. */
	onDeath: (reason: string) => void = () => {};
	private closing = false;

	constructor(readonly bin: string) {}

	start(): void {
		let proc: ChildProcessWithoutNullStreams;
		try {
			const log = process.env.ADVISOR_SERVE_LOG;
			const args = log ? ["serve", "--log", log] : ["serve"];
			proc = spawn(this.bin, args, { stdio: ["pipe", "pipe", "pipe"] });
		} catch (e) {
			this.die(`could not start ${this.bin} (${(e as Error).message})`);
			return;
		}
		this.proc = proc;
		proc.stdout.setEncoding("utf8");
		proc.stdout.on("data", (chunk: string) => this.onData(chunk));
		proc.stderr.setEncoding("utf8");
		proc.stderr.on("data", (chunk: string) => {
			this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_BYTES);
		});
		proc.stdin.on("error", () => {});
		proc.on("error", (e) => this.die(`could not start ${this.bin} (${e.message})`));
		proc.on("exit", (code, signal) => {
			const how = signal ? `killed by ${signal}` : `exit code ${code}`;
			const tail = this.stderrTail.trim().split("\n").at(-1);
			this.die(`the advisor process stopped (${how}${tail ? `: ${tail}` : ""})`);
		});
		// pi's own lifetime decides; the child follows it through stdin's end of file.
		proc.unref();
		(proc.stdout as any).unref?.();
		(proc.stderr as any).unref?.();
		(proc.stdin as any).unref?.();
	}

	get pid(): number | undefined {
		return this.proc?.pid;
	}

	private die(reason: string): void {
		if (this.dead !== undefined) return;
		this.dead = reason;
		for (const { reject } of this.pending.values()) reject(new Error(`advisor: ${reason}`));
		this.pending.clear();
		if (!this.closing) this.onDeath(reason);
	}

	private onData(chunk: string): void {
		let start = 0;
		for (;;) {
			const nl = chunk.indexOf("\n", start);
			const piece = nl < 0 ? chunk.slice(start) : chunk.slice(start, nl);
			if (!this.skipping) {
				this.bufferBytes += Buffer.byteLength(piece);
				if (this.bufferBytes > MAX_LINE_BYTES) {
					this.skipping = true;
					this.buffer = "";
				} else {
					this.buffer += piece;
				}
			}
			if (nl < 0) return;
			const line = this.buffer;
			const skipped = this.skipping;
			this.buffer = "";
			this.bufferBytes = 0;
			this.skipping = false;
			if (!skipped && line.trim()) this.onLine(line);
			start = nl + 1;
		}
	}

	private onLine(line: string): void {
		let msg: any;
		try {
			msg = JSON.parse(line);
		} catch {
			return;
		}
		if (msg && typeof msg.id === "number" && this.pending.has(msg.id)) {
			const waiter = this.pending.get(msg.id)!;
			this.pending.delete(msg.id);
			if (msg.error) {
				waiter.reject(new RpcError(msg.error.code, String(msg.error.message ?? "error"), msg.error.data));
			} else {
				waiter.resolve(msg.result);
			}
		} else if (msg && msg.id === undefined && typeof msg.method === "string") {
			try {
				this.onNotification(msg.method, msg.params ?? {});
			} catch {
				// A failing listener must not stop the reader.
			}
		}
	}

	/** Sends a request; the promise settles with its result or rejects (RpcError, or the death). */
	request(method: string, params: unknown): Promise<any> {
		if (this.dead !== undefined || !this.proc) return Promise.reject(new Error(`advisor: ${this.dead ?? "not running"}`));
		const id = this.nextId++;
		const line = `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject });
			try {
				this.proc!.stdin.write(line);
			} catch (e) {
				this.pending.delete(id);
				reject(e);
			}
		});
	}

	/** Closes the child's input: it disposes its sessions and exits (V1). */
	close(): void {
		this.closing = true;
		try {
			this.proc?.stdin.end();
		} catch {
			// already closed
		}
	}
}

// ---------------------------------------------------------------------------------------------
// The bridge: what one pi process knows about its advisor session.

interface Bridge {
	child: AdvisorChild | undefined;
	/** The newest pi API object and context (the factory runs again for each session runtime). */
	pi: ExtensionAPI | undefined;
	ctx: ExtensionContext | undefined;
	/** The advisor session id (the pi session id when it was opened), when open. */
	sessionId: string | undefined;
	/** The pi session file it was opened for. */
	sessionFile: string | undefined;
	/** The id of the last entry the server has (the `base` of the next `session/turnEnd`). */
	cursor: string | null;
	running: boolean;
	deathShown: boolean;
	timings: string | undefined;
	/** The running pi and its API line, decided at the first load (`pi-api.ts`). */
	info: PiInfo | undefined;
	adapter: LineAdapter | undefined;
	/** The unsupported-pi notice was shown (once per process). */
	unsupportedShown: boolean;
}

const BRIDGE_KEY = Symbol.for("advisor.pi.bridge");

function bridge(): Bridge {
	const g = globalThis as any;
	if (!g[BRIDGE_KEY]) {
		g[BRIDGE_KEY] = {
			child: undefined,
			pi: undefined,
			ctx: undefined,
			sessionId: undefined,
			sessionFile: undefined,
			cursor: null,
			running: false,
			deathShown: false,
			timings: process.env.ADVISOR_PI_TIMINGS || undefined,
			info: undefined,
			adapter: undefined,
			unsupportedShown: false,
		} satisfies Bridge;
	}
	return g[BRIDGE_KEY] as Bridge;
}

function notify(text: string, level: "info" | "warning" | "error" = "info"): void {
	try {
		bridge().ctx?.ui.notify(text, level);
	} catch {
		// no UI (print mode) or a stale context
	}
}

/** The child, started on first use; `undefined` once it has died (no advisor from then on). */
function childFor(): AdvisorChild | undefined {
	const b = bridge();
	if (b.child) return b.child.dead === undefined ? b.child : undefined;
	const child = new AdvisorChild(process.env.ADVISOR_BIN || "advisor");
	b.child = child;
	child.onNotification = onNotification;
	child.onDeath = (reason) => {
		b.sessionId = undefined;
		if (!b.deathShown) {
			b.deathShown = true;
			notify(`advisor: ${reason}; pi goes on without an advisor`, "warning");
		}
	};
	child.start();
	if (child.dead !== undefined) return undefined;
	child
		.request("initialize", { clientInfo: { name: "pi-advisor", version: EXTENSION_VERSION } })
		.then((info) => {
			if (info?.protocolVersion !== PROTOCOL_VERSION) {
				notify(`advisor: ${b.child?.bin} speaks protocol ${info?.protocolVersion}, this extension ${PROTOCOL_VERSION}`, "warning");
			}
		})
		.catch(() => {});
	return child;
}

/** One call on the open session; `undefined` when there is none, the call failed, or it was cut short. */
async function call(method: string, params: Record<string, unknown>, signal?: AbortSignal, ms = REQUEST_TIMEOUT_MS): Promise<any> {
	const b = bridge();
	const child = b.child;
	if (!b.sessionId || !child || child.dead !== undefined) return undefined;
	return race(child.request(method, { sessionId: b.sessionId, ...params }), signal, ms);
}

function quiet<T>(p: Promise<T>): Promise<T | undefined> {
	return p.catch(() => undefined);
}

function onNotification(method: string, params: any): void {
	const b = bridge();
	if (!b.sessionId || params?.sessionId !== b.sessionId) return;
	const pi = b.pi;
	switch (method) {
		case "session/wake":
			// The primary is idle: start a turn with the advisory (interrupt policy, D3).
			if (params.card) pi?.sendMessage(customMessage(params.card), { deliverAs: "steer", triggerTurn: true });
			break;
		case "session/card":
			// Visible, no turn (D6).
			if (params.card) pi?.sendMessage(customMessage(params.card), { triggerTurn: false });
			break;
		case "session/notice":
			if (typeof params.text === "string") notify(params.text);
			break;
		// session/steerReady: no pi hook fires inside a tool batch; the card stays in the
		// server's outbox until the next turn_end takes it.
	}
}

/**
 * Opens the advisor session for the current pi session, seeded at its end (X4) — or, with
 * `seed` false, empty, for a `session/rewrite` to fill (R1). The session file goes with it, so
 * the audit sits beside it (G7).
 */
async function openSession(ctx: ExtensionContext, forceEnabled: boolean, seed = true): Promise<string | undefined> {
	const b = bridge();
	const child = childFor();
	if (!child) return undefined;
	const agentDir = agentDirOf();
	const sm = ctx.sessionManager;
	const sessionId = sm.getSessionId();
	const named = advisorRole(ctx.cwd, agentDir);
	const leaf = seed ? (sm.getLeafId() ?? null) : null;
	const params: Record<string, unknown> = {
		sessionId,
		cwd: ctx.cwd,
		agentDir,
		messages: seed ? branchMessages(ctx) : [],
		leaf,
	};
	const file = sm.getSessionFile();
	if (file) params.sessionFile = file;
	if (named) params.model = await resolveModel(named.role, ctx);
	// The extension's state file wins over `advisor.enabled: false` in a K1 file.
	if (forceEnabled) params.settings = { enabled: true };
	try {
		const status = await race(child.request("session/open", params), undefined, OPEN_TIMEOUT_MS);
		if (status === undefined) return undefined;
		b.sessionId = sessionId;
		b.sessionFile = file;
		b.cursor = leaf;
		return statusText(status);
	} catch (e) {
		// A dead child has said so already (once).
		if (child.dead === undefined) notify(`advisor: could not open a session: ${(e as Error).message}`, "warning");
		return undefined;
	}
}

async function closeSession(): Promise<void> {
	const b = bridge();
	if (!b.sessionId) return;
	await quiet(call("session/close", {}));
	b.sessionId = undefined;
}

/** Tells the server the transcript was replaced (R1) and moves the cursor to the new leaf. */
async function rewrite(kind: string, ctx: ExtensionContext, leaf?: string | null): Promise<void> {
	const b = bridge();
	if (!b.sessionId) return;
	const newLeaf = leaf === undefined ? (ctx.sessionManager.getLeafId() ?? null) : leaf;
	await quiet(call("session/rewrite", { kind, leaf: newLeaf, messages: branchMessages(ctx) }));
	b.cursor = newLeaf;
}

/** Sends the turn's delta (`session/turnEnd`), recovering from a moved branch with a rewrite. */
async function sendTurn(ctx: ExtensionContext): Promise<void> {
	const b = bridge();
	const delta = deltaSince(ctx, b.cursor);
	if (delta.moved || delta.edited) {
		await rewrite(delta.edited ? "prune" : "rewind", ctx, delta.leaf);
		delta.messages = [];
	}
	const params = { base: b.cursor, leaf: delta.leaf, messages: delta.messages };
	const sent = call("session/turnEnd", params, ctx.signal, TURN_END_TIMEOUT_MS);
	// Written is as good as taken: an abort stops our wait, not the server's bookkeeping.
	b.cursor = delta.leaf;
	try {
		await sent;
	} catch (e) {
		if (e instanceof RpcError && e.code === -32010) {
			// The server's view of the branch differs from ours: hand it the whole branch.
			await rewrite("rewind", ctx, delta.leaf);
			await quiet(call("session/turnEnd", { base: b.cursor, leaf: b.cursor, messages: [] }, ctx.signal, TURN_END_TIMEOUT_MS));
		}
	}
}

async function setRunning(running: boolean, signal?: AbortSignal): Promise<void> {
	const b = bridge();
	if (b.running === running) return;
	b.running = running;
	await quiet(call("session/runState", { running }, signal));
}

/** The advice to fold in now (D3), as cards. */
async function takeDeliveries(signal?: AbortSignal): Promise<Card[]> {
	const result = await quiet(call("session/stepBoundary", {}, signal));
	const list = result?.deliveries;
	return Array.isArray(list) ? list.filter((d: any) => d && typeof d.content === "string") : [];
}

function statusText(status: any): string {
	if (typeof status === "string") return status;
	if (status && typeof status.text === "string") return status.text;
	return `advisor: ${JSON.stringify(status)}`;
}

function recordTiming(ms: number): void {
	const file = bridge().timings;
	if (!file) return;
	try {
		appendFileSync(file, `${ms.toFixed(3)}\n`);
	} catch {
		// measuring is best-effort
	}
}

/** The lines `/advisor status` adds: which pi, and what its API cannot honour (V5). */
function piStatus(): string {
	const { info, adapter } = bridge();
	if (!info || !adapter) return "";
	const which = info.version ? `pi ${info.version} (${info.pkg})` : "pi (version not found)";
	const lines = [`\n${which}, ${adapter.line} API`];
	for (const limit of adapter.limits) lines.push(`on pi ${adapter.line}: ${limit}`);
	return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// `/advisor` (C1–C4): on/off/toggle are the host's (persisted, V5); the rest goes to the server.

async function command(args: string, ctx: ExtensionContext): Promise<string> {
	const b = bridge();
	b.ctx = ctx;
	if (b.info?.problem) return b.info.problem;
	const line = args.trim();
	const verb = (line.split(/\s+/)[0] ?? "").toLowerCase();
	const agentDir = agentDirOf();
	const forward = async (canonical: string): Promise<string> => {
		const child = b.child;
		if (!b.sessionId || !child) return "advisor: off";
		try {
			const reply = await race(child.request("session/command", { sessionId: b.sessionId, line: canonical }), undefined, REQUEST_TIMEOUT_MS);
			return reply === undefined ? "advisor: no answer" : statusText(reply);
		} catch (e) {
			return `advisor: ${(e as Error).message}`;
		}
	};
	const on = async (): Promise<string> => {
		writeEnabledState(agentDir, true);
		// Already open: the server's `on` resumes a paused advisor (F3).
		if (b.sessionId) return forward("on");
		if (!childFor()) return `advisor: unavailable (${b.child?.dead ?? "not started"})`;
		return (await openSession(ctx, true)) === undefined ? "advisor: on, but the session could not be opened" : "advisor: on";
	};
	const off = async (): Promise<string> => {
		writeEnabledState(agentDir, false);
		await closeSession();
		return "advisor: off";
	};
	switch (verb) {
		case "":
		case "toggle":
			return b.sessionId ? off() : on();
		case "on":
			return on();
		case "off":
			return off();
		case "status":
		case "dump":
		case "test": {
			const about = verb === "status" ? piStatus() : "";
			if (!b.sessionId) {
				const named = advisorRole(ctx.cwd, agentDir);
				const dead = b.child?.dead;
				const why = dead ? `unavailable (${dead})` : "off (/advisor on turns it on)";
				return `advisor: ${why}; model ${named ? `${named.role} (from ${named.from})` : "not assigned"}${about}`;
			}
			return `${await forward([verb, ...line.split(/\s+/).slice(1)].join(" "))}${about}`;
		}
		default:
			return USAGE;
	}
}

// ---------------------------------------------------------------------------------------------
// `ask_advisor` (G8): the primary asks the advisor, which has reviewed every turn, a question.
// The tool is always offered (a stable tool list keeps pi's prompt prefix); when consulting is
// off (`advisor.consult: false`) or there is no advisor, a call answers with an error that says
// so, and the primary goes on.

const ASK_TOOL = "ask_advisor";
const ASK_DESCRIPTION =
	"Ask your advisor a question and get its answer. The advisor is a second model that has " +
	"reviewed every turn of this session so far (your messages, tool calls and their results) and " +
	"can read the workspace; it answers from that context, after the reviews still pending. " +
	"Asking costs a pause of seconds to minutes, so ask when a second opinion is worth it: before " +
	"an irreversible step (deleting or overwriting files, a migration, a force push, a release), " +
	"when you are stuck on a failure you cannot explain, or when you are unsure which of two " +
	"approaches fits. Ask one concrete question and say what you are about to do. Not for routine steps.";

/** The total time `ask_advisor` waits: the server's own bound plus slack. */
function askTimeoutMs(cwd: string, agentDir: string): number {
	const configured = Number(k1Scalar(cwd, agentDir, "advisor", "requestTimeoutSecs"));
	const request = Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_REQUEST_TIMEOUT_SECS;
	return (ASK_DRAIN_SECS + request) * 1000 + ASK_SLACK_MS;
}

interface AskDetails {
	question: string;
	error?: string;
}

/** A tool result: the advisor's answer, or an error text the primary can act on. */
function askResult(question: string, text: string, error: boolean) {
	const details: AskDetails = error ? { question, error: text } : { question };
	return { content: [{ type: "text" as const, text }], details, isError: error };
}

/** Runs one `ask_advisor` call: `session/ask`, raced against the tool's abort signal and bounded. */
async function askAdvisor(rawQuestion: unknown, signal: AbortSignal | undefined, ctx: ExtensionContext) {
	const question = typeof rawQuestion === "string" ? rawQuestion.trim() : "";
	if (!question) return askResult("", `${ASK_TOOL}: the question is empty`, true);
	if (question.length > MAX_QUESTION_CHARS) {
		return askResult(question.slice(0, 200), `${ASK_TOOL}: the question is longer than ${MAX_QUESTION_CHARS} characters; ask a shorter one`, true);
	}
	const b = bridge();
	const child = b.child;
	if (!b.sessionId || !child || child.dead !== undefined) {
		const why = child?.dead !== undefined ? `unavailable (${child.dead})` : "off";
		return askResult(question, `${ASK_TOOL}: the advisor is ${why}; go on without it`, true);
	}
	try {
		const reply = await race(
			child.request("session/ask", { sessionId: b.sessionId, question }),
			signal,
			askTimeoutMs(ctx.cwd, agentDirOf()),
		);
		if (reply === undefined) {
			const why = signal?.aborted ? "the call was cancelled" : "the advisor did not answer in time";
			return askResult(question, `${ASK_TOOL}: ${why}`, true);
		}
		const answer = typeof reply?.answer === "string" ? reply.answer : "";
		if (!answer.trim()) return askResult(question, `${ASK_TOOL}: the advisor gave no answer`, true);
		return askResult(question, answer, false);
	} catch (e) {
		// A JSON-RPC error (paused, failing, consulting off, …) or the child's death.
		return askResult(question, `${ASK_TOOL}: ${(e as Error).message}`, true);
	}
}

function registerAskTool(pi: ExtensionAPI): void {
	pi.registerTool({
		name: ASK_TOOL,
		label: "Ask the advisor",
		description: ASK_DESCRIPTION,
		promptSnippet: "Ask your advisor, which has reviewed every turn, for a second opinion",
		promptGuidelines: [
			`Use ${ASK_TOOL} before an irreversible step, when stuck on a failure you cannot explain, or when unsure between approaches; not for routine steps.`,
		],
		parameters: Type.Object({
			question: Type.String({
				description: "One concrete question, with what you are about to do or what you are weighing",
			}),
		}),
		async execute(_toolCallId, params, signal, _onUpdate, ctx) {
			return askAdvisor((params as { question?: unknown })?.question, signal, ctx);
		},
	});
}

// ---------------------------------------------------------------------------------------------
// The extension factory: runs once per session runtime; the bridge lives on globalThis.

/** The shared core, as the line adapters see it (`pi-api.ts`). */
const core: Core = {
	isOpen: () => bridge().sessionId !== undefined,
	sendTurn: (ctx) => sendTurn(ctx),
	takeDeliveries: (signal) => takeDeliveries(signal),
	interrupted: async () => {
		await quiet(call("session/interrupt", { byUser: true }));
	},
	setRunning: (running, signal) => setRunning(running, signal),
	customMessage: (card) => customMessage(card),
	recordTiming: (ms) => recordTiming(ms),
	giveUp: async (text) => {
		const b = bridge();
		b.info = { ...b.info, line: undefined, problem: text };
		notify(text, "warning");
		await closeSession();
	},
};

/** A pi this extension does not support: one notice at start, and `/advisor` says the same. */
function registerUnsupported(pi: ExtensionAPI, problem: string): void {
	const b = bridge();
	pi.on?.("session_start", async (_event: unknown, ctx: ExtensionContext) => {
		b.ctx = ctx;
		if (b.unsupportedShown) return;
		b.unsupportedShown = true;
		notify(problem, "warning");
	});
	pi.registerCommand?.("advisor", {
		description: "The advisor (not supported on this pi)",
		handler: async (_args: string, ctx: ExtensionContext) => {
			ctx.ui.notify(problem, "warning");
		},
	});
}

export default function advisorExtension(pi: ExtensionAPI): void {
	const b = bridge();
	b.pi = pi;
	b.info ??= detectPi(pi);
	const info = b.info;
	if (!info.line) {
		registerUnsupported(pi, info.problem ?? "advisor: this pi is not supported; the advisor is off");
		return;
	}
	b.adapter ??= adapterFor(info.line);
	const adapter = b.adapter;

	pi.on("session_start", async (event, ctx) => {
		b.pi = pi;
		b.ctx = ctx;
		b.running = false;
		if (!b.info?.line) return; // given up on this pi's API (pi-api.ts)
		const sm = ctx.sessionManager;
		// pi 0.73's RPC mode starts a replaced session twice: the second start changes nothing.
		if (event.reason !== "startup" && event.reason !== "reload" && b.sessionId === sm.getSessionId() && b.sessionFile === sm.getSessionFile()) return;
		adapter.reset();
		if (event.reason === "startup" || event.reason === "reload" || !b.sessionId) {
			if (b.sessionId) await closeSession();
			if (isEnabled(ctx.cwd, agentDirOf())) await openSession(ctx, readEnabledState(agentDirOf()) === true);
			return;
		}
		// new / resume / fork replace pi's session: a new id and session file. The advisor follows
		// it — its audit goes beside the new file (G7), not on beside the first one — and starts
		// over on the new branch with the bounded replay (R1): the old session is closed (its audit
		// flushed), the new one opened empty and given the branch as a rewrite of that kind. It was
		// on, so it stays on (V5).
		await closeSession();
		if ((await openSession(ctx, true, false)) !== undefined) await rewrite(event.reason, ctx);
	});

	pi.on("session_shutdown", async (event) => {
		if (event.reason !== "quit") return;
		await closeSession();
		b.child?.close();
	});

	pi.on("before_agent_start", async (event, ctx) => {
		b.ctx = ctx;
		if (!b.sessionId) return;
		// A wake starts a run too: that is not the user's prompt (D6).
		if (adapter.isUserPrompt(event)) await quiet(call("session/userPrompt", {}, ctx.signal));
		await setRunning(true, ctx.signal);
		// The run's first step boundary: advice queued while idle (nits) goes with the prompt.
		const cards = await takeDeliveries(ctx.signal);
		if (cards.length === 0) return;
		const merged: Card = {
			channel: cards[0].channel,
			content: cards.map((c) => c.content).join("\n"),
			notes: cards.flatMap((c) => c.notes ?? []),
		};
		return { message: customMessage(merged) };
	});

	pi.on("agent_start", async (_event, ctx) => {
		if (b.sessionId) await setRunning(true, ctx.signal);
	});

	// turn_end and the end of a run: per API line (pi-api.ts).
	adapter.register(pi, core);

	pi.on("session_compact", async (_event, ctx) => {
		adapter.reset();
		await rewrite("compaction", ctx);
	});

	pi.on("session_tree", async (event, ctx) => {
		adapter.reset();
		await rewrite("tree", ctx, event.newLeafId ?? null);
	});

	registerAskTool(pi);

	pi.registerCommand("advisor", {
		description: "The advisor: toggle | on | off | status | dump [raw] | test <severity> <note>",
		handler: async (args, ctx) => {
			const text = await command(args ?? "", ctx);
			ctx.ui.notify(text, "info");
		},
	});
}

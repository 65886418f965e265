/**
 * The advisor for pi (SPEC V5): a second model reviews every turn of pi's agent and sends short
 * advice back (nit / concern / blocker). The work is done by `advisor serve`, a child process
 * speaking JSON-RPC 2.0 over stdio (SPEC V1–V4); this extension maps pi's events onto that
 * protocol and hands the advice to pi. What it relies on from pi (events, payloads, what a
 * handler may return, the RPC commands the tests drive) is written down in this directory's
 * README.md, "What the bridge relies on".
 *
 * Load it with `pi -e integrations/pi/advisor.ts`, copy it into pi's extensions folder, or
 * install the directory as a pi package. The binary comes from `ADVISOR_BIN`, else `advisor`
 * on `PATH`. No build step: pi loads TypeScript as it is.
 *
 * Layout, top to bottom: plain helpers (limits, settings files, model resolution, transcript
 * mapping), the child process (`AdvisorChild`), its supervisor (`Supervisor`: every call with
 * a deadline, a failed state, restarts with backoff — one per pi process, kept on
 * `globalThis`), the advisor session of the current pi session (`AdvisorSession`, opened in
 * the background), the `/advisor` command, the `ask_advisor` tool (G8), and the extension
 * factory that wires pi's hooks to it. What differs between pi's API lines (0.73.x and 1.x) —
 * the turn and run hooks — is in `pi-api.ts`, chosen once at load time.
 *
 * The promise (SPEC S2, F4, V5): pi never waits on a failing advisor. No pi event waits on the
 * child more than `EVENT_BUDGET_MS` in all (a wait the settings ask for — syncBacklog, the
 * reconfirm catch-up, `ask_advisor` — runs to its own limit while the child keeps answering
 * liveness checks); the first call that misses its deadline ends the child (one notice), and a
 * new one starts at a later turn.
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
/** The most one pi event waits on the child in all (S2, F4): a healthy child answers in
 * milliseconds; one that has not answered by then counts as failed. */
const EVENT_BUDGET_MS = 2_000;
/** `turnEnd` may wait for syncBacklog up to 30 s by design (S1), plus slack; liveness checks
 * meanwhile tell such a wait from a wedged child. Used only when the open's answer did not say
 * `turnEndWaits` (a server that does says it for every syncBacklog value, and the wait is then
 * `TURN_END_LONGEST_MS`). */
const TURN_END_TIMEOUT_MS = 35_000;
/** The longest the extension waits for a `turnEnd` the server may hold: a numeric syncBacklog
 * wait (30 s, S1) and the reconfirm catch-up of a terminal turn (120 s, D5) one after the other,
 * plus slack. A `strict` syncBacklog has no cap at the server (CA10: a silent model holds it
 * until its call fails, 180 s): past this the agent goes on, the review's advice coming at a
 * later boundary. Used when
 * the reconfirm policy is in play (the session's or a roster entry's), when the server says its
 * turn end may wait without saying why (`turnEndWaits`), and as the deadline of a turn end
 * nobody waits for: a server that holds it is not failed for that (a wedged one misses the step
 * boundary's deadline right after). */
const TURN_END_LONGEST_MS = 155_000;
/** How often a long wait checks that the child still answers at all (each check has the
 * event budget to answer). */
const PROBE_EVERY_MS = 1_000;
/** Calls nobody waits for (the open, state changes, turn ends without syncBacklog): a child
 * that has not answered one by then counts as failed. */
const BACKGROUND_DEADLINE_MS = 10_000;
/** Resolving the advisor model through pi's registry (stored keys) before the open. */
const MODEL_LOOKUP_MS = 10_000;
/** The most endpoints of pi-only providers passed to `session/open` (the server's own cap). */
const MAX_PROVIDER_ENDPOINTS = 256;
/** A failed child gets TERM, then KILL after this. */
const KILL_GRACE_MS = 1_000;
/** Waits before a new child after the 1st, 2nd, 3rd… death in a row (V5). */
const RESTART_BACKOFF_MS = [1_000, 5_000, 30_000];
/** This many deaths within `DEATH_WINDOW_MS` and no new child starts until `/advisor on`. */
const DEATHS_BEFORE_GIVING_UP = 3;
const DEATH_WINDOW_MS = 10 * 60_000;
/** Calls kept while the open is being prepared; beyond this the branch is re-sent whole. */
const MAX_QUEUED_CALLS = 64;
/** Input the child has not read yet; past this it counts as failed (a stopped child reads nothing). */
const MAX_UNREAD_INPUT_BYTES = 128 * 1024 * 1024;
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

/** The custom message type of every advisory this extension hands to pi (D2). The server
 * keeps such messages out of what the advisor reviews (X2) and reads the advice already in a
 * branch from them (P3), so they are sent like any other message. */
const CUSTOM_TYPE = "advisor";
const STATE_FILE = "advisor-extension.json";
const EXTENSION_VERSION = "0.1.0";
/** The `advisor serve` protocol this extension speaks (V2 `initialize`). */
const PROTOCOL_VERSION = 1;
const USAGE = "usage: /advisor [toggle|on [NAME]|off [NAME]|status|dump [NAME] [raw]|test <nit|concern|blocker> <note>]";
/** The most roster names kept from `session/open` and `session/status` (RO23), and the
 * longest name used. */
const MAX_ROSTER_NAMES = 64;
const MAX_NAME_CHARS = 200;

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

/** How a bounded wait ended. */
type Outcome<T> = { kind: "value"; value: T } | { kind: "timeout" } | { kind: "aborted" };

/**
 * Waits for `promise` at most `ms` and until `signal` aborts. A rejection is passed on; the
 * promise itself is left to run (and its rejection handled).
 */
function within<T>(promise: Promise<T>, signal: AbortSignal | undefined, ms: number): Promise<Outcome<T>> {
	if (signal?.aborted) {
		promise.catch(() => {});
		return Promise.resolve({ kind: "aborted" });
	}
	return new Promise<Outcome<T>>((resolve, reject) => {
		const timer = setTimeout(() => finish({ kind: "timeout" }), Math.max(0, ms));
		const onAbort = () => finish({ kind: "aborted" });
		function finish(outcome: Outcome<T> | undefined, error?: unknown) {
			clearTimeout(timer);
			signal?.removeEventListener("abort", onAbort);
			if (outcome) resolve(outcome);
			else reject(error);
		}
		signal?.addEventListener("abort", onAbort, { once: true });
		promise.then(
			(value) => finish({ kind: "value", value }),
			(e) => finish(undefined, e ?? new Error("rejected")),
		);
	});
}

/** The value of a bounded wait, or `undefined` when it timed out or was aborted. */
function valueOf<T>(outcome: Outcome<T>): T | undefined {
	return outcome.kind === "value" ? outcome.value : undefined;
}

function seconds(ms: number): string {
	return `${Math.round(ms / 100) / 10} s`;
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

/** The model pi's registry holds for `role` (`provider/id[:thinking]`), with the level. */
function lookUpModel(role: string, registry: any): { model: any; thinking?: string } | undefined {
	const slash = role.indexOf("/");
	if (slash <= 0 || !registry) return undefined;
	const provider = role.slice(0, slash);
	const rest = role.slice(slash + 1);
	try {
		// The whole rest as an id first (OpenRouter ids hold `/` and `:`), then a trailing level.
		const whole = registry.find(provider, rest);
		if (whole) return { model: whole };
		const colon = rest.lastIndexOf(":");
		if (colon > 0 && THINKING.has(rest.slice(colon + 1))) {
			const model = registry.find(provider, rest.slice(0, colon));
			if (model) return { model, thinking: rest.slice(colon + 1) };
		}
	} catch {
		// A registry that fails to load: the server resolves the role itself.
	}
	return undefined;
}

/**
 * The model to pass to `session/open`: a resolved endpoint when pi's registry knows the model,
 * else the role string itself (the server then resolves it with its own catalog).
 */
async function resolveModel(role: string, ctx: ExtensionContext): Promise<Json> {
	const registry = ctx.modelRegistry;
	const found = lookUpModel(role, registry);
	if (!found) return role;
	return endpointOf(found.model, registry, found.thinking);
}

/** The endpoint object of a model of pi's registry: where it is, its key and headers, its facts. */
async function endpointOf(model: any, registry: any, thinking?: string): Promise<{ [key: string]: Json }> {
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

/** APIs `advisor serve` speaks; a model of another is not passed. */
const SERVE_APIS = new Set(["openai-completions", "anthropic-messages"]);

const isText = (v: unknown): v is string => typeof v === "string" && v !== "";
const isCount = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) > 0);

/**
 * Whether `advisor serve` takes an endpoint object in `providers` (its rules for `session/open`):
 * `id`, `baseUrl` and `api` non-empty strings, an API it speaks, a named `provider`,
 * `contextWindow` and `maxTokens` positive integers when given, `reasoning` a boolean, `apiKey`
 * a string, `headers` strings, `cost` numbers. The server refuses the whole list for one bad
 * endpoint, so a bad one is left out here instead.
 */
function serverTakes(e: { [key: string]: Json }): boolean {
	const ok =
		isText(e.id) &&
		isText(e.baseUrl) &&
		isText(e.api) &&
		SERVE_APIS.has(e.api) &&
		typeof e.provider === "string" &&
		e.provider.trim() !== "" &&
		isCount(e.contextWindow) &&
		isCount(e.maxTokens) &&
		(e.reasoning === undefined || typeof e.reasoning === "boolean") &&
		(e.apiKey === undefined || typeof e.apiKey === "string");
	const object = (v: Json | undefined) => v === undefined || (v !== null && typeof v === "object" && !Array.isArray(v));
	if (!ok || !object(e.headers) || !object(e.cost)) return false;
	const headers = Object.values((e.headers ?? {}) as { [key: string]: Json });
	const cost = (e.cost ?? {}) as { [key: string]: Json };
	const price = (v: Json | undefined) => v === undefined || (typeof v === "number" && Number.isFinite(v));
	return headers.every((h) => typeof h === "string") && ["input", "output", "cacheRead", "cacheWrite"].every((k) => price(cost[k]));
}

/**
 * The models of the providers only pi knows (those of `<agentDir>/models.json`), as endpoint
 * objects for `session/open`'s `providers` (RO8, RO23): a roster entry naming one of them is
 * reached where pi reaches it. At most `MAX_PROVIDER_ENDPOINTS`, each one the server takes
 * (`serverTakes`); none when the registry fails.
 */
async function piOnlyEndpoints(ctx: ExtensionContext, agentDir: string): Promise<Json[]> {
	const registry = ctx.modelRegistry;
	const declared = readJsonFile(join(agentDir, "models.json"))?.providers;
	if (!registry || !declared || typeof declared !== "object") return [];
	let models: any[] = [];
	try {
		models = (registry.getAll() as any[]).filter(
			(m) => m && Object.prototype.hasOwnProperty.call(declared, m.provider) && SERVE_APIS.has(m.api),
		);
	} catch {
		return [];
	}
	const endpoints = await Promise.all(models.map((m) => endpointOf(m, registry)));
	return endpoints.filter(serverTakes).slice(0, MAX_PROVIDER_ENDPOINTS);
}

/**
 * Why the advisor model named in the settings cannot be used, in pi's terms (M1, V5): which
 * model was not found, where it was looked up (pi's model registry: its built-in models and
 * `models.json`), and what to set. `undefined` when pi's registry has the model.
 */
function modelProblem(named: { role: string; from: string }, ctx: ExtensionContext): string | undefined {
	const registry = ctx.modelRegistry;
	if (!registry || lookUpModel(named.role, registry)) return undefined;
	const agentDir = agentDirOf();
	const models = join(agentDir, "models.json");
	const what = `the advisor model \`${named.role}\` (from ${named.from})`;
	const fix = (example?: string) =>
		`Set modelRoles.advisor in ${join(agentDir, "config.yml")} (or ADVISOR_MODEL) to a model pi knows` +
		`${example ? `, e.g. ${example}` : ""}, or add the model to ${models}; then /advisor on`;
	const slash = named.role.indexOf("/");
	if (slash <= 0) return `${what} is not of the form provider/model-id. ${fix()}`;
	const provider = named.role.slice(0, slash);
	let ids: string[] = [];
	try {
		ids = (registry.getAll() as any[]).filter((m) => m?.provider === provider).map((m) => String(m.id));
	} catch {
		// an unreadable registry: say what we know
	}
	const source = readJsonFile(models)?.providers?.[provider] !== undefined ? `from ${models}` : "built into pi";
	const where = ids.length
		? `pi's model registry has provider \`${provider}\` (${source}) but no model \`${named.role.slice(slash + 1)}\`; it has ${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}`
		: `pi's model registry (its built-in models and ${models}) has no provider \`${provider}\``;
	return `${what} was not found: ${where}. ${fix(ids.length ? `${provider}/${ids[0]}` : undefined)}`;
}

/** Command-line flags of `advisor` that a pi user cannot pass. */
const CLI_FLAGS = /--(?:model|base-url|api)\b/;

/**
 * A server text as a pi user should read it: the server also serves its own command line,
 * whose advice ("pass --base-url", "pass --model") means nothing inside pi. Such a text keeps
 * its first clause and gets pi's way to set the model instead.
 */
function inPiTerms(text: string): string {
	if (!CLI_FLAGS.test(text)) return text;
	const head = text.split(/[:;,]?\s*(?:or |and )?pass --/)[0].replace(/[\s:;,]+$/, "");
	return `${head}: set modelRoles.advisor in pi's config.yml (or ADVISOR_MODEL) to a model in pi's model registry (its built-in models and models.json)`;
}

// ---------------------------------------------------------------------------------------------
// Transcript: pi session entries → SPEC §2 messages (README "The transcript delta").

/** The message an entry contributes, or `undefined` for state-only entries. */
function entryMessage(entry: any): any {
	switch (entry?.type) {
		case "message": {
			const m = entry.message;
			// pi saves the system prompt and tool list as a system message: not the primary's words.
			return !m || m.role === "system" ? undefined : m;
		}
		case "custom_message":
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
		return projectedMessages(ctx.sessionManager).filter((m: any) => m?.role !== "system");
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

/**
 * The names of the advisors a card's notes come from, in order, each once (RO18, RO23): a
 * note's `advisor` is one name, or several comma-joined when advisors raised the same note
 * (RO22). Empty for the unnamed advisor of a session without a roster (RO12).
 */
function cardAdvisors(card: Card): string[] {
	const names: string[] = [];
	const add = (value: unknown) => {
		if (typeof value !== "string") return;
		for (const part of value.split(",")) {
			const name = part.trim();
			if (name && !names.includes(name)) names.push(name);
		}
	};
	for (const note of Array.isArray(card.notes) ? card.notes : []) add(note?.advisor);
	return names;
}

/**
 * The models that produced a card's notes (SP8), in order, each once: a note's `model` is one
 * `provider/id`, or several comma-joined for a note two advisors raised (RO22). Empty for a
 * note no model wrote (`/advisor test`).
 */
function cardModels(card: Card): string[] {
	const models: string[] = [];
	for (const note of Array.isArray(card.notes) ? card.notes : []) {
		if (typeof note?.model !== "string") continue;
		for (const part of note.model.split(",")) {
			const model = part.trim();
			if (model && !models.includes(model)) models.push(model);
		}
	}
	return models;
}

/**
 * A delivery or card as the custom message pi stores (D2: `customType: "advisor"`, notes in
 * details). With a roster, `details.advisor` names who raised it (RO23): one name, or the
 * names comma-joined for a message carrying several advisors' notes; `details.model` names
 * the model that produced it, after fallback (SP8), models comma-joined likewise.
 */
function customMessage(card: Card) {
	const details: Record<string, unknown> = { channel: card.channel, notes: card.notes ?? [] };
	const names = cardAdvisors(card);
	if (names.length > 0) details.advisor = names.join(", ");
	const models = cardModels(card);
	if (models.length > 0) details.model = models.join(", ");
	return { customType: CUSTOM_TYPE, content: card.content, display: true, details };
}

// ---------------------------------------------------------------------------------------------
// The roster (RO19, RO20, RO23): the named advisors `session/open` reports.

/** One named advisor as `session/open` reports it. */
interface RosterName {
	name: string;
	slug: string;
}

/** The slug of an advisor name (RO7): lower case, runs of other characters one `-`. */
function slugOf(name: string): string {
	const slug = name
		.toLowerCase()
		.replace(/[^a-z0-9]+/g, "-")
		.replace(/^-+|-+$/g, "");
	return slug || "advisor";
}

/** The named advisors in an open result (`roster: {advisors: [{name, slug, enabled, model, …}]}`,
 * else the status's per-advisor lines, `advisors`), at most `MAX_ROSTER_NAMES`. */
function rosterOf(result: any): RosterName[] {
	const reported = result?.roster?.advisors ?? result?.advisors;
	const list = Array.isArray(reported) ? reported : [];
	const out: RosterName[] = [];
	for (const item of list) {
		if (out.length >= MAX_ROSTER_NAMES) break;
		const name = typeof item?.name === "string" ? item.name.trim().slice(0, MAX_NAME_CHARS) : "";
		if (!name) continue;
		const slug = typeof item.slug === "string" && item.slug ? item.slug : slugOf(name);
		if (!out.some((r) => r.slug === slug)) out.push({ name, slug });
	}
	return out;
}

/** The roster warnings of an open result (`roster: {warnings: [text, …]}`). */
function rosterWarningsOf(result: any): string[] {
	const list = Array.isArray(result?.roster?.warnings) ? result.roster.warnings : [];
	return list.filter((w: unknown): w is string => typeof w === "string" && w.trim() !== "").slice(0, MAX_ROSTER_NAMES);
}

/** The advisor of the roster that `word` names (by slug, RO19), or `undefined`. */
function rosterEntry(roster: RosterName[], word: string): RosterName | undefined {
	const slug = slugOf(word);
	return roster.find((r) => r.slug === slug);
}

// ---------------------------------------------------------------------------------------------
// The child process: one `advisor serve`, JSON lines split on LF only.

type Listener = (method: string, params: any) => void;

const INITIALIZE = { clientInfo: { name: "pi-advisor", version: EXTENSION_VERSION } };

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
	/** Whether any line came from the child yet. */
	heard = false;
	/** The process could not be started at all (no binary, not executable). */
	unstartable = false;
	/** Unsolicited lines (wake, card, notice, steerReady). */
	onNotification: Listener = () => {};
	/** Called once when the child is gone, with why. */
	onExit: (reason: string) => void = () => {};

	constructor(readonly bin: string) {}

	start(): void {
		let proc: ChildProcessWithoutNullStreams;
		try {
			const log = process.env.ADVISOR_SERVE_LOG;
			const args = log ? ["serve", "--log", log] : ["serve"];
			proc = spawn(this.bin, args, { stdio: ["pipe", "pipe", "pipe"] });
		} catch (e) {
			this.unstartable = true;
			this.die(`the advisor process could not start: ${this.bin} (${(e as Error).message})`);
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
		proc.on("error", (e) => {
			// Emitted when spawning failed (then there is no pid), or when a signal could not be sent.
			if (proc.pid !== undefined) return;
			this.unstartable = true;
			this.die(`the advisor process could not start: ${this.bin} (${e.message})`);
		});
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

	/** Bytes written to the child that it has not read yet. */
	get unread(): number {
		return this.proc?.stdin.writableLength ?? 0;
	}

	private die(reason: string): void {
		if (this.dead !== undefined) return;
		this.dead = reason;
		for (const { reject } of this.pending.values()) reject(new Error(`advisor: ${reason}`));
		this.pending.clear();
		this.onExit(reason);
	}

	private onData(chunk: string): void {
		this.heard = true;
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
		try {
			this.proc?.stdin.end();
		} catch {
			// already closed
		}
	}

	/** Ends the child by its PID: TERM (and CONT, so that a stopped process acts on it at once),
	 * then KILL after `KILL_GRACE_MS`. Waiting calls fail at once with `reason`. */
	kill(reason: string): void {
		this.die(reason);
		const proc = this.proc;
		if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
		try {
			proc.stdin.destroy();
			proc.kill("SIGTERM");
			proc.kill("SIGCONT");
		} catch {
			// gone already
		}
		const timer = setTimeout(() => {
			if (proc.exitCode === null && proc.signalCode === null) {
				try {
					proc.kill("SIGKILL");
				} catch {
					// gone meanwhile
				}
			}
		}, KILL_GRACE_MS);
		proc.once("exit", () => clearTimeout(timer));
	}
}

// ---------------------------------------------------------------------------------------------
// The supervisor (S2, F4, V5): one child at a time, and no call without a deadline.
//
//   acquire()          the running child; a new one when none ran yet or a restart is due
//   restartNow()       `/advisor on`: forget past deaths and start a child at once
//   call(m, p, budget) a request a pi event waits for, within the event's budget
//   fire(m, p)         a request nobody waits for (the pipe keeps the order of requests)
//   callLong(m, p, …)  a wait that may be long by design (syncBacklog, ask), with liveness checks
//   describe()         the state for `/advisor status` when no child runs
//
// A call that misses its deadline fails the child: one notice that says why, the child is
// ended by its PID, waiting calls return at once, later calls do not wait. A failed or dead
// child is replaced at the next turn (`acquire`) after RESTART_BACKOFF_MS; after
// DEATHS_BEFORE_GIVING_UP deaths within DEATH_WINDOW_MS it is not, until `/advisor on`.

/** What one pi event may still spend waiting on the child, and pi's abort signal. */
class Budget {
	private readonly end: number;

	constructor(
		readonly signal?: AbortSignal,
		readonly ms = EVENT_BUDGET_MS,
	) {
		this.end = performance.now() + ms;
	}

	left(): number {
		return Math.max(0, this.end - performance.now());
	}
}

/** The advisor's state in words, and what the user can expect or do next. */
interface StateWords {
	state: string;
	next?: string;
}

type ChildState =
	| { kind: "none" }
	| { kind: "up"; child: AdvisorChild; since: number }
	| { kind: "down"; reason: string; retryAt: number }
	| { kind: "gaveUp"; reason: string };

class Supervisor {
	state: ChildState = { kind: "none" };
	/** When the children died, within the last `DEATH_WINDOW_MS`. */
	private deaths: number[] = [];
	/** Deaths in a row, of children that lived less than `DEATH_WINDOW_MS` each. */
	private streak = 0;
	/** Unsolicited lines of the running child. */
	onNotification: Listener = () => {};
	/** The running child is gone (its sessions with it). */
	onDown: (child: AdvisorChild) => void = () => {};
	/** Tells the pi user something (a notice). */
	say: (text: string) => void = () => {};

	constructor(
		readonly bin: string,
		private readonly now: () => number = Date.now,
	) {}

	get child(): AdvisorChild | undefined {
		return this.state.kind === "up" ? this.state.child : undefined;
	}

	acquire(): AdvisorChild | undefined {
		const s = this.state;
		if (s.kind === "up") return s.child;
		if (s.kind === "gaveUp" || (s.kind === "down" && this.now() < s.retryAt)) return undefined;
		return this.start();
	}

	restartNow(): AdvisorChild | undefined {
		if (this.state.kind === "up") return this.state.child;
		this.deaths = [];
		this.streak = 0;
		this.state = { kind: "none" };
		return this.start();
	}

	private start(): AdvisorChild | undefined {
		const child = new AdvisorChild(this.bin);
		this.state = { kind: "up", child, since: this.now() };
		child.onNotification = (method, params) => {
			if (this.child === child) this.onNotification(method, params);
		};
		child.onExit = (reason) => this.down(child, reason);
		child.start();
		if (this.child !== child) return undefined;
		this.fire("initialize", INITIALIZE)
			.then((info) => {
				if (info?.protocolVersion !== PROTOCOL_VERSION) {
					this.say(`advisor: ${this.bin} speaks protocol ${info?.protocolVersion}, this extension ${PROTOCOL_VERSION}`);
				}
			})
			.catch(() => {});
		return child;
	}

	/** A request a pi event waits for, within `budget`: the result, or `undefined` when no child
	 * runs, pi aborted, or the child missed the deadline (then it has failed). Server errors
	 * reject with `RpcError`. */
	async call(method: string, params: unknown, budget: Budget): Promise<any> {
		const child = this.child;
		if (!child) return undefined;
		const outcome = await within(this.send(child, method, params), budget.signal, budget.left());
		if (outcome.kind === "timeout") this.fail(child, `did not answer ${method} within ${seconds(budget.ms)}`);
		return valueOf(outcome);
	}

	/** A request nobody waits for; a child that has not answered it within `ms` has failed. The
	 * returned promise settles with the answer (or rejects) for whoever wants to look. */
	fire(method: string, params: unknown, ms = BACKGROUND_DEADLINE_MS): Promise<any> {
		const child = this.child;
		if (!child) return Promise.resolve(undefined);
		const answer = this.send(child, method, params);
		within(answer, undefined, ms).then(
			(outcome) => {
				if (outcome.kind === "timeout") this.fail(child, `did not answer ${method} within ${seconds(ms)}`);
			},
			() => {},
		);
		return answer;
	}

	/** A request that may take long by design, bounded by `ms` and `signal`; meanwhile the child
	 * must go on answering a cheap `initialize` within the event budget, every `PROBE_EVERY_MS`
	 * (a child that does is not failed for a long answer: the wait just ends at `ms`). */
	async callLong(method: string, params: unknown, signal: AbortSignal | undefined, ms: number): Promise<any> {
		const child = this.child;
		if (!child) return undefined;
		const answer = this.send(child, method, params);
		void this.watch(child, method, answer);
		return valueOf(await within(answer, signal, ms));
	}

	private async watch(child: AdvisorChild, method: string, answer: Promise<unknown>): Promise<void> {
		let settled = false;
		const done = answer.then(
			() => (settled = true),
			() => (settled = true),
		);
		while (!settled && this.child === child) {
			const probe = await within(this.send(child, "initialize", INITIALIZE), undefined, EVENT_BUDGET_MS).catch(() => undefined);
			if (probe?.kind === "timeout" && !settled) {
				this.fail(child, `stopped answering while ${method} waited (no answer within ${seconds(EVENT_BUDGET_MS)})`);
				return;
			}
			await within(done, undefined, PROBE_EVERY_MS);
		}
	}

	private send(child: AdvisorChild, method: string, params: unknown): Promise<any> {
		const answer = child.request(method, params);
		if (child.unread > MAX_UNREAD_INPUT_BYTES) {
			this.fail(child, `is not reading its input (${Math.round(child.unread / 1048576)} MiB unread)`);
		}
		return answer;
	}

	/** The running `child` missed a deadline: it has failed; end it by its PID. */
	fail(child: AdvisorChild, what: string): void {
		if (this.child !== child) return;
		const silent = child.heard ? "" : " (it has answered nothing since it started)";
		const reason = `the advisor process ${what}${silent}`;
		this.down(child, reason);
		child.kill(reason);
	}

	/** `child` is gone: one notice, and a restart at a later turn — or none after too many. */
	private down(child: AdvisorChild, reason: string): void {
		const s = this.state;
		if (s.kind !== "up" || s.child !== child) return;
		const now = this.now();
		if (now - s.since >= DEATH_WINDOW_MS) this.streak = 0;
		this.streak += 1;
		this.deaths = [...this.deaths.filter((t) => now - t < DEATH_WINDOW_MS), now];
		if (child.unstartable) {
			// Trying again will not find the binary either.
			this.state = { kind: "gaveUp", reason };
			this.say(`advisor: ${reason}; pi goes on without an advisor. Put \`advisor\` on PATH or set ADVISOR_BIN to it, then /advisor on.`);
		} else if (this.deaths.length >= DEATHS_BEFORE_GIVING_UP) {
			this.state = { kind: "gaveUp", reason };
			const times = `${this.deaths.length} times in ${DEATH_WINDOW_MS / 60_000} minutes`;
			this.say(
				`advisor: ${reason}. That is ${times}, so pi goes on without an advisor. ` +
					"To see why, quit pi and start it again with ADVISOR_SERVE_LOG=FILE set (the advisor then logs to FILE); or /advisor on to try again now.",
			);
		} else {
			const wait = RESTART_BACKOFF_MS[Math.min(this.streak, RESTART_BACKOFF_MS.length) - 1];
			this.state = { kind: "down", reason, retryAt: now + wait };
			this.say(`advisor: ${reason}; pi goes on without it, and a new advisor process starts at the next turn`);
		}
		child.close();
		this.onDown(child);
	}

	/** The state in words when no child runs (`/advisor status`), and what happens next. */
	describe(): StateWords {
		const s = this.state;
		switch (s.kind) {
			case "none":
			case "up":
				return { state: "starting…" };
			case "down": {
				const wait = s.retryAt - this.now();
				const when = wait > 0 ? ` (in ${Math.ceil(wait / 1000)} s or later)` : "";
				return { state: `unavailable: ${s.reason}`, next: `a new advisor process starts at the next turn${when}` };
			}
			case "gaveUp": {
				const times = this.deaths.length >= DEATHS_BEFORE_GIVING_UP ? ` (${this.deaths.length} times in ${DEATH_WINDOW_MS / 60_000} minutes)` : "";
				return { state: `unavailable: ${s.reason}${times}`, next: "/advisor on tries again" };
			}
		}
	}

	/** pi is quitting: the child's input ends, so it disposes its sessions and exits (V1). */
	close(): void {
		this.child?.close();
	}
}

// ---------------------------------------------------------------------------------------------
// The bridge: what one pi process knows (kept on globalThis: the factory runs again for each
// session runtime, the module once), and the advisor session of the current pi session.

/** How a session call waits: within the event's budget, not at all, or long by design. */
type Wait =
	| { kind: "budget"; budget: Budget }
	| { kind: "fire"; ms?: number }
	| { kind: "long"; signal: AbortSignal | undefined; ms: number };

const FIRE: Wait = { kind: "fire" };

/**
 * One advisor session on one child. It is opened in the background (V5): calls made until the
 * open is answered wait in a bounded queue and go out in order once it is — a call the server
 * reads before it has answered the open can find the session not yet seeded.
 */
interface AdvisorSession {
	id: string;
	/** The pi session file it was opened for. */
	file: string | undefined;
	child: AdvisorChild;
	phase: "opening" | "open" | "failed";
	/** Why the open failed. */
	reason?: string;
	/** Whether the open waits on the child alone (its model is looked up): from then on a
	 * silent open is the child's fault. */
	waitsOnChild: boolean;
	/** Settles once the open is answered or given up: whether it succeeded. */
	opened: Promise<boolean>;
	/** Calls waiting for the open's answer. */
	queued: number;
	/** The id of the last entry the server has (the `base` of the next `session/turnEnd`). */
	cursor: string | null;
	/** The server's `turnEnd` waits by design (syncBacklog on, or the reconfirm policy, S1/D5). */
	turnEndWaits: boolean;
	/** The reconfirm policy (the session's or a roster entry's), or a server that says its turn
	 * end waits without saying why: a turn end may wait for the catch-up too (D5). */
	reconfirm: boolean;
	/** The open's result said whether `turnEnd` waits (`turnEndWaits`): no guessing then. */
	serverSaysWaits: boolean;
	/** The server's branch may differ from ours: the next turn re-sends it whole first. */
	resync: boolean;
	/** A switch, new session or fork is being prepared: the server's catch-up waits are
	 * released until it happens or is cancelled (CA11). */
	transitioning?: boolean;
	/** A `session/status` for the roster's names is on its way (one at a time). */
	refreshing: Promise<void> | undefined;
	/** What the server was last told of pi's run state (`session/runState`). */
	running: boolean;
	/** The server's status (open, roster refresh) carries the action gate's counters: its gate
	 * is on, possibly only by a roster entry's own `gate` (GT10). */
	gateOn?: boolean;
}

interface Bridge {
	supervisor: Supervisor | undefined;
	/** The newest pi API object and context (the factory runs again for each session runtime). */
	pi: ExtensionAPI | undefined;
	ctx: ExtensionContext | undefined;
	/** The user wants an advisor (settings at start, or `/advisor on`): a dead child comes back. */
	wanted: boolean;
	session: AdvisorSession | undefined;
	/** The close of the previous session: a new open goes out after it (the id may be the same). */
	closing: Promise<unknown>;
	timings: string | undefined;
	/** The running pi and its API line, decided at the first load (`pi-api.ts`). */
	info: PiInfo | undefined;
	adapter: LineAdapter | undefined;
	/** The unsupported-pi notice was shown (once per process). */
	unsupportedShown: boolean;
	/** The named advisors of the open session (RO23); empty without a roster. */
	roster: RosterName[];
	/** The names `ask_advisor` was last registered with (re-registered when they change). */
	askNames: string;
	/** Roster warnings already shown (each once per process). */
	warningsShown: Set<string>;
	/** Advisors paused by `/advisor off NAME` (slugs), for the pi session they were paused in:
	 * session-scoped, never persisted (RO19), and paused again when a new advisor process
	 * reopens that session. */
	paused: { piSession: string; slugs: Set<string> };
}

const BRIDGE_KEY = Symbol.for("advisor.pi.bridge");

function bridge(): Bridge {
	const g = globalThis as any;
	if (!g[BRIDGE_KEY]) {
		g[BRIDGE_KEY] = {
			supervisor: undefined,
			pi: undefined,
			ctx: undefined,
			wanted: false,
			session: undefined,
			closing: Promise.resolve(),
			timings: process.env.ADVISOR_PI_TIMINGS || undefined,
			info: undefined,
			adapter: undefined,
			unsupportedShown: false,
			roster: [],
			askNames: "",
			warningsShown: new Set(),
			paused: { piSession: "", slugs: new Set() },
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

/** The process's supervisor, made on first use. */
function supervisor(): Supervisor {
	const b = bridge();
	if (!b.supervisor) {
		const sup = new Supervisor(process.env.ADVISOR_BIN || "advisor");
		sup.onNotification = onNotification;
		sup.say = (text) => notify(text, "warning");
		sup.onDown = (child) => {
			if (b.session?.child === child) b.session = undefined;
		};
		b.supervisor = sup;
	}
	return b.supervisor;
}

/** The current session while its child runs and its open has not failed. */
function liveSession(): AdvisorSession | undefined {
	const s = bridge().session;
	return s && s.phase !== "failed" && s.child === bridge().supervisor?.child ? s : undefined;
}

/** The current session once its open has succeeded. */
function openedSession(): AdvisorSession | undefined {
	const s = liveSession();
	return s?.phase === "open" ? s : undefined;
}

/** One call on session `s`, waiting as `wait` says. `undefined` when the child is gone, the
 * wait was cut short, or the child missed its deadline; server errors reject (RpcError). */
function callOn(s: AdvisorSession, method: string, params: Record<string, unknown>, wait: Wait): Promise<any> {
	const sup = supervisor();
	if (s.child !== sup.child) return Promise.resolve(undefined);
	const full = { sessionId: s.id, ...params };
	const go = (): Promise<any> => {
		if (s.child !== sup.child) return Promise.resolve(undefined);
		switch (wait.kind) {
			case "budget":
				return sup.call(method, full, wait.budget);
			case "fire":
				return sup.fire(method, full, wait.ms);
			case "long":
				return sup.callLong(method, full, wait.signal, wait.ms);
		}
	};
	// Straight to the pipe once the session is open: the pipe keeps the order.
	if (s.phase === "open") return go();
	if (s.queued >= MAX_QUEUED_CALLS) {
		s.resync = true;
		return Promise.resolve(undefined);
	}
	s.queued += 1;
	// A pi event waits for the open within its budget (a long wait starts once the call is
	// out); a call nobody waits for waits as long as the open may take.
	const budget = wait.kind === "budget" ? wait.budget : wait.kind === "long" ? new Budget(wait.signal) : undefined;
	const limit = budget ? budget.left() : MODEL_LOOKUP_MS + BACKGROUND_DEADLINE_MS;
	return within(s.opened, budget?.signal, limit).then((outcome) => {
		s.queued -= 1;
		if (outcome.kind === "timeout" && budget && s.waitsOnChild) {
			// The first event that needs an answer waited its budget on a silent open.
			sup.fail(s.child, `did not answer session/open within ${seconds(budget.ms)}`);
		}
		return outcome.kind === "value" && outcome.value ? go() : undefined;
	});
}

/** `callOn` for calls whose failure changes nothing (the child's own failure says so). */
function quietly(s: AdvisorSession, method: string, params: Record<string, unknown>, wait: Wait = FIRE): Promise<any> {
	return callOn(s, method, params, wait).catch(() => undefined);
}

function onNotification(method: string, params: any): void {
	const b = bridge();
	if (!b.session || params?.sessionId !== b.session.id) return;
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
			if (typeof params.text === "string") notify(inPiTerms(params.text));
			// A reload's notice (RO21) may be about an advisor added, removed or renamed.
			if (b.session.phase === "open") void refreshRoster(b.session);
			break;
		// session/steerReady: no pi hook fires inside a tool batch; the card stays in the
		// server's outbox until the next turn_end takes it.
	}
}

/**
 * Whether the server's `turnEnd` may wait, from a `session/open` or `session/status` result:
 * the open's `turnEndWaits` when it has one (the server knows: syncBacklog, reconfirm for the
 * session or any roster entry, a roster that may appear); else the extension's own reading of
 * the settings, plus the reconfirm policy of the session or of any advisor the result lists.
 */
function turnEndWaitsFrom(s: AdvisorSession, result: any): void {
	if (typeof result?.turnEndWaits === "boolean") {
		s.serverSaysWaits = true;
		s.turnEndWaits = result.turnEndWaits;
		// Which wait it is the server does not say: the longest one is covered.
		s.reconfirm = result.turnEndWaits;
		return;
	}
	if (s.serverSaysWaits) return;
	const listed = result?.roster?.advisors ?? result?.advisors;
	const advisors: any[] = Array.isArray(listed) ? listed : [];
	if (result?.policy === "reconfirm" || advisors.some((a) => a?.policy === "reconfirm")) {
		s.turnEndWaits = s.reconfirm = true;
	}
}

/** Whether the K1 settings turn syncBacklog on (S1): the server's `turnEnd` waits then. */
function syncBacklogOn(cwd: string, agentDir: string): boolean {
	const sync = k1Scalar(cwd, agentDir, "advisor", "syncBacklog");
	return sync !== undefined && sync !== "off";
}

/**
 * Opens the advisor session for the current pi session in the background (V5), on the running
 * child or a new one: seeded at the end of the branch (X4), or — with `replay` — empty, with
 * the whole branch given to it as a `session/rewrite` of that kind (R1). It is enabled (the
 * extension owns on/off, V5). The session file goes with it, so the audit sits beside it (G7).
 * Nothing here waits; `undefined` when no child can run now.
 */
function openSession(ctx: ExtensionContext, replay?: string): AdvisorSession | undefined {
	const b = bridge();
	const child = supervisor().acquire();
	if (!child) return undefined;
	const agentDir = agentDirOf();
	const sm = ctx.sessionManager;
	const leaf = sm.getLeafId() ?? null;
	const named = advisorRole(ctx.cwd, agentDir);
	const params: Record<string, unknown> = {
		sessionId: sm.getSessionId(),
		cwd: ctx.cwd,
		agentDir,
		messages: replay ? [] : branchMessages(ctx),
		leaf: replay ? null : leaf,
		settings: { enabled: true },
	};
	const file = sm.getSessionFile();
	if (file) params.sessionFile = file;
	let markOpened = (_ok: boolean) => {};
	const reconfirm = k1Scalar(ctx.cwd, agentDir, "advisor", "policy") === "reconfirm";
	const s: AdvisorSession = {
		id: String(params.sessionId),
		file,
		child,
		phase: "opening",
		waitsOnChild: false,
		opened: new Promise<boolean>((resolve) => (markOpened = resolve)),
		queued: 0,
		cursor: replay ? null : leaf,
		turnEndWaits: reconfirm || syncBacklogOn(ctx.cwd, agentDir),
		reconfirm,
		serverSaysWaits: false,
		resync: false,
		refreshing: undefined,
		running: false,
	};
	b.session = s;
	const fail = (reason: string) => {
		s.phase = "failed";
		s.reason = reason;
		if (b.session === s) setRoster([]);
		if (b.session === s) notify(`advisor: unavailable: ${reason}`, "warning");
		markOpened(false);
	};
	const previous = b.closing;
	void (async () => {
		if (named) {
			const model = await within(resolveModel(named.role, ctx), undefined, MODEL_LOOKUP_MS).catch(() => undefined);
			params.model = (model && valueOf(model)) ?? named.role;
		}
		// Roster entries may name other models only pi's registry knows (RO8, RO23).
		const known = await within(piOnlyEndpoints(ctx, agentDir), undefined, MODEL_LOOKUP_MS).catch(() => undefined);
		const providers = known && valueOf(known);
		if (providers && providers.length > 0) params.providers = providers;
		// The previous session's close goes first (it may wait for that session's open).
		s.waitsOnChild = true;
		await within(previous, undefined, BACKGROUND_DEADLINE_MS).catch(() => undefined);
		const sup = supervisor();
		if (sup.child !== child) return markOpened(false);
		const answer = sup.fire("session/open", params);
		try {
			const status = await answer;
			if (status === undefined) return markOpened(false);
			s.phase = "open";
			turnEndWaitsFrom(s, status);
			gateOnFrom(s, status);
			if (b.session === s) rosterOpened(s, status);
			markOpened(true);
		} catch (e) {
			if (!(e instanceof RpcError)) return markOpened(false); // the child's failure says so
			const field = (e.data as any)?.field;
			const aboutModel = (typeof field === "string" && field.startsWith("model")) || CLI_FLAGS.test(e.message);
			fail((aboutModel && named && modelProblem(named, ctx)) || inPiTerms(e.message));
		}
	})();
	if (replay) void quietly(s, "session/rewrite", { kind: replay, leaf, messages: branchMessages(ctx) });
	if (replay) s.cursor = leaf;
	return s;
}

/**
 * What the open reported about the roster (RO23): the names (for `/advisor on|off NAME`
 * completion and `ask_advisor`'s `advisor` argument), its warnings (each shown once), and the
 * advisors paused by name earlier in this pi session, paused again on this advisor session.
 */
function rosterOpened(s: AdvisorSession, result: any): void {
	const b = bridge();
	setRoster(rosterOf(result));
	for (const warning of rosterWarningsOf(result)) {
		if (b.warningsShown.has(warning)) continue;
		b.warningsShown.add(warning);
		notify(`advisor: ${warning}`, "warning");
	}
	if (b.paused.piSession !== s.id) b.paused = { piSession: s.id, slugs: new Set() };
	for (const slug of b.paused.slugs) {
		if (rosterEntry(b.roster, slug)) void quietly(s, "session/command", { line: `off ${slug}` });
	}
}

/** The roster's names as the extension knows them now; `ask_advisor` is registered again when
 * they changed (pi refreshes its tool list). */
function setRoster(roster: RosterName[]): void {
	const b = bridge();
	b.roster = roster;
	if (b.pi && askNames(roster) !== b.askNames) {
		try {
			registerAskTool(b.pi, roster);
		} catch {
			// pi replaced its session meanwhile (a stale API object): the next factory run registers it.
		}
	}
}

/**
 * Reads the roster's names again from `session/status`'s per-advisor list (RO21: a reload adds,
 * removes and renames advisors during the session; no `advisors` there means no roster), and —
 * when the open did not say — whether a turn end may now wait for an advisor's catch-up. One
 * read at a time; waits as `wait` says.
 */
function refreshRoster(s: AdvisorSession, wait: Wait = FIRE): Promise<void> {
	if (s.phase !== "open") return Promise.resolve();
	s.refreshing ??= quietly(s, "session/status", {}, wait).then((status) => {
		s.refreshing = undefined;
		if (!status || typeof status !== "object" || bridge().session !== s) return;
		turnEndWaitsFrom(s, status);
		gateOnFrom(s, status);
		setRoster(rosterOf(status));
	});
	return s.refreshing;
}

/** Closes the current session (its audit is flushed, G7); nothing waits for it. */
function closeSession(): void {
	const b = bridge();
	const s = b.session;
	b.session = undefined;
	if (b.roster.length > 0) setRoster([]);
	if (s && s.phase !== "failed") b.closing = quietly(s, "session/close", {});
}

/**
 * The session to talk to at a turn: the current one — or, when the advisor is wanted and its
 * process died, a new process with a fresh session seeded at the end (X4), once the backoff
 * allows (V5). `fresh` when it was opened just now (its seed holds this turn).
 */
function sessionForTurn(ctx: ExtensionContext): { s: AdvisorSession; fresh: boolean } | undefined {
	const b = bridge();
	const live = liveSession();
	if (live) return { s: live, fresh: false };
	if (!b.wanted || b.session?.phase === "failed") return undefined;
	const s = openSession(ctx);
	return s ? { s, fresh: true } : undefined;
}

/** Tells the server the transcript was replaced (R1) and moves the cursor to the new leaf. */
function rewrite(s: AdvisorSession, kind: string, ctx: ExtensionContext, leaf?: string | null): void {
	const newLeaf = leaf === undefined ? (ctx.sessionManager.getLeafId() ?? null) : leaf;
	void quietly(s, "session/rewrite", { kind, leaf: newLeaf, messages: branchMessages(ctx) });
	s.cursor = newLeaf;
	s.resync = false;
}

/** Whether the turn's assistant message called tools: the agent will call its model again. */
function madeToolCalls(event: any): boolean {
	const content = event?.message?.role === "assistant" ? event.message.content : undefined;
	return Array.isArray(content) && content.some((c: any) => c?.type === "toolCall");
}

/**
 * Sends the turn's delta (`session/turnEnd`). Without syncBacklog or reconfirm the server
 * answers at once, so nothing waits for it (the pipe keeps it ahead of the step boundary);
 * otherwise the wait is the configured one, raced against pi's abort and checked for
 * liveness. A moved branch is sent whole first. Returns the budget left for the boundary.
 */
async function sendTurn(s: AdvisorSession, ctx: ExtensionContext, event: any, budget: Budget): Promise<Budget> {
	const delta = deltaSince(ctx, s.cursor);
	if (delta.moved || delta.edited || s.resync) {
		rewrite(s, delta.edited ? "prune" : "rewind", ctx, delta.leaf);
		delta.messages = [];
	}
	const params = { base: s.cursor, leaf: delta.leaf, messages: delta.messages, willContinue: madeToolCalls(event) };
	// Written is as good as taken: an abort stops our wait, not the server's bookkeeping.
	s.cursor = delta.leaf;
	const mismatch = (e: unknown) => {
		// The server's view of the branch differs from ours: the next turn sends it whole.
		if (e instanceof RpcError && e.code === -32010) s.resync = true;
	};
	if (!s.turnEndWaits) {
		callOn(s, "session/turnEnd", params, { kind: "fire", ms: TURN_END_LONGEST_MS }).catch(mismatch);
		return budget;
	}
	const long: Wait = { kind: "long", signal: budget.signal, ms: s.reconfirm ? TURN_END_LONGEST_MS : TURN_END_TIMEOUT_MS };
	try {
		await callOn(s, "session/turnEnd", params, long);
	} catch (e) {
		mismatch(e);
		if (s.resync) {
			rewrite(s, "rewind", ctx, delta.leaf);
			await quietly(s, "session/turnEnd", { base: s.cursor, leaf: s.cursor, messages: [] }, long);
		}
	}
	// The wait was the configured one; the boundary gets its own budget.
	return new Budget(budget.signal);
}

function setRunning(s: AdvisorSession, running: boolean): void {
	if (s.running === running) return;
	s.running = running;
	void quietly(s, "session/runState", { running });
}

/** The advice to fold in now (D3), as cards; waits at most what is left of `budget`. */
async function takeDeliveries(s: AdvisorSession, budget: Budget): Promise<Card[]> {
	const result = await quietly(s, "session/stepBoundary", {}, { kind: "budget", budget });
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

/** The advisor's state when no session is open (`/advisor status`, V5). */
function advisorState(): StateWords {
	const b = bridge();
	if (!b.wanted) return { state: "off", next: "/advisor on turns it on" };
	const s = b.session;
	if (s?.phase === "failed") return { state: `unavailable: ${s.reason}` };
	if (liveSession()) return { state: "starting…" };
	return supervisor().describe();
}

/** `advisorState` as the user reads it. */
function stateWords(): string {
	const { state, next } = advisorState();
	return next ? `${state}; ${next}` : state;
}

async function command(args: string, ctx: ExtensionContext): Promise<string> {
	const b = bridge();
	b.ctx = ctx;
	if (b.info?.problem) return b.info.problem;
	const line = args.trim();
	const verb = (line.split(/\s+/)[0] ?? "").toLowerCase();
	const agentDir = agentDirOf();
	const forward = async (s: AdvisorSession, canonical: string): Promise<string> => {
		try {
			const reply = await callOn(s, "session/command", { line: canonical }, { kind: "budget", budget: new Budget() });
			return reply === undefined ? `advisor: ${stateWords()}` : statusText(reply);
		} catch (e) {
			return `advisor: ${inPiTerms((e as Error).message)}`;
		}
	};
	const on = async (): Promise<string> => {
		writeEnabledState(agentDir, true);
		b.wanted = true;
		// The whole roster (RO19): advisors paused by name run again.
		b.paused.slugs.clear();
		// Already open: the server's `on` resumes a paused advisor (F3).
		const open = openedSession();
		if (open) return forward(open, "on");
		// A new child when none runs (past deaths forgotten), a new session on it.
		if (b.session && !liveSession()) b.session = undefined;
		const budget = new Budget();
		const s = liveSession() ?? (supervisor().restartNow() ? openSession(ctx) : undefined);
		const ok = s ? valueOf(await within(s.opened, undefined, budget.left())) : false;
		if (ok) return "advisor: on";
		if (s && ok === undefined && s.child === supervisor().child) {
			supervisor().fail(s.child, `did not answer session/open within ${seconds(budget.ms)}`);
		}
		return `advisor: on (saved for later sessions), but ${stateWords()}`;
	};
	const off = (): string => {
		writeEnabledState(agentDir, false);
		b.wanted = false;
		closeSession();
		return "advisor: off";
	};
	const named = () => {
		const role = advisorRole(ctx.cwd, agentDir);
		return `model ${role ? `${role.role} (from ${role.from})` : "not assigned"}`;
	};
	// `/advisor on NAME`, `off NAME` (RO19): one advisor, for this session only. The server
	// pauses or resumes it; the choice is kept here (never in the state file) so that a new
	// advisor process reopening this pi session pauses it again.
	const oneAdvisor = async (resume: boolean, name: string): Promise<string> => {
		const open = openedSession();
		if (!open) return `advisor: ${stateWords()}`;
		const reply = await forward(open, `${resume ? "on" : "off"} ${name}`);
		// An advisor a reload added since the names were last read (RO21).
		if (!rosterEntry(b.roster, name)) await refreshRoster(open, { kind: "budget", budget: new Budget() });
		const entry = rosterEntry(b.roster, name);
		if (entry) {
			if (b.paused.piSession !== open.id) b.paused = { piSession: open.id, slugs: new Set() };
			if (resume) b.paused.slugs.delete(entry.slug);
			else b.paused.slugs.add(entry.slug);
		}
		return reply;
	};
	const name = line.split(/\s+/).slice(1).join(" ");
	switch (verb) {
		case "":
		case "toggle":
			if (name) return USAGE;
			return liveSession() ? off() : on();
		case "on":
			return name ? oneAdvisor(true, name) : on();
		case "off":
			return name ? oneAdvisor(false, name) : off();
		case "status":
		case "dump":
		case "test": {
			const about = verb === "status" ? piStatus() : "";
			const open = openedSession();
			if (!open) return `advisor: ${stateWords()}; ${named()}${about}`;
			const text = await forward(open, [verb, ...line.split(/\s+/).slice(1)].join(" "));
			// The names as they are now (RO21), for completion and `ask_advisor`.
			if (verb === "status") await refreshRoster(open, { kind: "budget", budget: new Budget() });
			return `${text}${about}`;
		}
		default:
			return USAGE;
	}
}

const VERBS = ["toggle", "on", "off", "status", "dump", "test"];

/**
 * Completions for `/advisor ARGS` (pi replaces the whole argument text with `value`): the
 * verbs, then the roster's advisors after `on`, `off` and `dump` (by slug, RO19).
 */
function completions(prefix: string): { value: string; label: string; description?: string }[] | null {
	const text = String(prefix ?? "").replace(/^\s+/, "");
	const words = text.split(/\s+/);
	if (words.length <= 1) {
		const items = VERBS.filter((v) => v.startsWith(words[0].toLowerCase())).map((v) => ({ value: v, label: v }));
		return items.length ? items : null;
	}
	const verb = words[0].toLowerCase();
	if (words.length > 2 || !["on", "off", "dump"].includes(verb)) return null;
	const typed = words[1].toLowerCase();
	const items = bridge()
		.roster.filter((r) => r.slug.startsWith(typed) || r.name.toLowerCase().startsWith(typed))
		.map((r) => ({ value: `${verb} ${r.slug}`, label: r.slug, description: r.name }));
	return items.length ? items : null;
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

// ---------------------------------------------------------------------------------------------
// The action gate (GT11, GT12): pi's `tool_call` event put to `session/gate` before the call runs.

/** The gate model's time unless `advisor.gateTimeoutMs` says otherwise (GATE.md). */
const DEFAULT_GATE_TIMEOUT_MS = 15_000;
/** What the extension adds to the gate's own bound before it lets the call run unjudged. */
const GATE_SLACK_MS = 5_000;
/** How long a confirm dialog for an `ask` stays open; unanswered, the call is blocked. */
const GATE_CONFIRM_MS = 120_000;
/** The longest reason handed to the model or shown in a dialog. */
const MAX_GATE_REASON_CHARS = 2_000;

/** Whether the K1 settings turn the gate on (`advisor.gate: risky|all`), or the open session's
 * status says it is on (a roster entry's own `gate`, GT10). */
function gateOn(cwd: string, agentDir: string, s: AdvisorSession | undefined): boolean {
	if (s?.gateOn) return true;
	const mode = k1Scalar(cwd, agentDir, "advisor", "gate");
	return mode === "risky" || mode === "all";
}

/** Whether a status (the open's, a roster refresh's) says the session's gate is on: it carries
 * `spend.actionGate` while it is, whoever turned it on (GT10: a roster entry's own `gate`). */
function gateOnFrom(s: AdvisorSession, status: any): void {
	const counts = status?.spend?.actionGate;
	s.gateOn = counts !== null && typeof counts === "object";
}

/** Shows a fail mode's or the breaker's reason to the person (GT5, GT7), as other notices. */
function gateNote(source: unknown, tool: string, reason: string): void {
	if (source !== "failMode" && source !== "breaker") return;
	notify(`advisor gate (${tool}): ${reason}`, "warning");
}

/** The total time a `tool_call` waits for the gate: its model's bound plus slack. */
function gateWaitMs(cwd: string, agentDir: string): number {
	const configured = Number(k1Scalar(cwd, agentDir, "advisor", "gateTimeoutMs"));
	const model = Number.isFinite(configured) && configured >= 100 ? Math.min(configured, 600_000) : DEFAULT_GATE_TIMEOUT_MS;
	return model + GATE_SLACK_MS;
}

/** What a `tool_call` handler answers: nothing (the call runs) or a block with its reason. */
type GateAnswer = { block: true; reason: string } | undefined;

/**
 * Puts one proposed tool call to the gate (GT12). `deny` blocks it with the reason, which the
 * model reads as the tool's result; `ask` asks the person through pi's confirm dialog where pi
 * has a UI (`canAsk`), else the server's `gateFailMode` has already decided. No advisor, a
 * failed child, or no answer within the bound: the call runs (S2, V5: a failing advisor never
 * holds pi).
 */
async function gateToolCall(event: any, ctx: ExtensionContext): Promise<GateAnswer> {
	const agentDir = agentDirOf();
	const s = liveSession();
	if (!gateOn(ctx.cwd, agentDir, s)) return undefined;
	const tool = typeof event?.toolName === "string" ? event.toolName : "";
	if (!s || !tool) return undefined;
	const ui: any = (ctx as any).ui;
	const canAsk = (ctx as any).hasUI === true && typeof ui?.confirm === "function";
	const signal: AbortSignal | undefined = (ctx as any).signal;
	const wait: Wait = { kind: "long", signal, ms: gateWaitMs(ctx.cwd, agentDir) };
	const params = { tool, input: (event?.input ?? null) as Json, cwd: ctx.cwd, canAsk };
	const verdict = await callOn(s, "session/gate", params, wait).catch(() => undefined);
	const decision = verdict?.decision;
	const reason = typeof verdict?.reason === "string" ? verdict.reason.slice(0, MAX_GATE_REASON_CHARS) : "";
	gateNote(verdict?.source, tool, reason);
	if (decision === "deny") return { block: true, reason: `The advisor's action gate denied this call: ${reason}` };
	if (decision !== "ask") return undefined;
	if (!canAsk) return { block: true, reason: `The advisor's action gate wants the user to decide, and nobody can be asked: ${reason}` };
	try {
		const ok = await ui.confirm("Advisor: run this call?", `${tool}: ${reason}`, { signal, timeout: GATE_CONFIRM_MS });
		return ok ? undefined : { block: true, reason: `The user declined this call after the advisor's action gate asked: ${reason}` };
	} catch {
		return { block: true, reason: `The advisor's action gate asked and no answer came: ${reason}` };
	}
}

/** The total time `ask_advisor` waits: the server's own bound plus slack. */
function askTimeoutMs(cwd: string, agentDir: string): number {
	const configured = Number(k1Scalar(cwd, agentDir, "advisor", "requestTimeoutSecs"));
	const request = Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_REQUEST_TIMEOUT_SECS;
	return (ASK_DRAIN_SECS + request) * 1000 + ASK_SLACK_MS;
}

interface AskDetails {
	question: string;
	/** The advisor asked by name (RO20), when one was named. */
	advisor?: string;
	error?: string;
}

/** A tool result: the advisor's answer, or an error text the primary can act on. */
function askResult(question: string, text: string, error: boolean, advisor?: string) {
	const details: AskDetails = { question };
	if (advisor) details.advisor = advisor;
	if (error) details.error = text;
	return { content: [{ type: "text" as const, text }], details, isError: error };
}

/** Runs one `ask_advisor` call: `session/ask` (to the advisor named, RO20), raced against the
 * tool's abort signal and bounded. */
async function askAdvisor(rawQuestion: unknown, rawAdvisor: unknown, signal: AbortSignal | undefined, ctx: ExtensionContext) {
	const question = typeof rawQuestion === "string" ? rawQuestion.trim() : "";
	const advisor = typeof rawAdvisor === "string" && rawAdvisor.trim() ? rawAdvisor.trim().slice(0, MAX_NAME_CHARS) : undefined;
	if (!question) return askResult("", `${ASK_TOOL}: the question is empty`, true, advisor);
	const chars = [...question];
	if (chars.length > MAX_QUESTION_CHARS) {
		return askResult(chars.slice(0, 200).join(""), `${ASK_TOOL}: the question is longer than ${MAX_QUESTION_CHARS} characters; ask a shorter one`, true, advisor);
	}
	const s = openedSession();
	// The primary reads this: the state, not what the user can do about it.
	if (!s) return askResult(question, `${ASK_TOOL}: the advisor is ${advisorState().state}; go on without it`, true, advisor);
	const result = (text: string, error: boolean) => askResult(question, text, error, advisor);
	try {
		const wait: Wait = { kind: "long", signal, ms: askTimeoutMs(ctx.cwd, agentDirOf()) };
		const params: Record<string, unknown> = advisor ? { question, advisor } : { question };
		const reply = await callOn(s, "session/ask", params, wait);
		if (reply === undefined) {
			const why = signal?.aborted ? "the call was cancelled" : "the advisor did not answer in time";
			return result(`${ASK_TOOL}: ${why}`, true);
		}
		const answer = typeof reply?.answer === "string" ? reply.answer : "";
		if (!answer.trim()) return result(`${ASK_TOOL}: the advisor gave no answer`, true);
		return result(answer, false);
	} catch (e) {
		// A JSON-RPC error (paused, failing, consulting off, an unknown advisor, …) or the child's death.
		return result(`${ASK_TOOL}: ${inPiTerms((e as Error).message)}`, true);
	}
}

/** The names `ask_advisor` lists, as one key (to tell when they changed). */
function askNames(roster: RosterName[]): string {
	return roster.map((r) => r.name).join("\n");
}

/**
 * The tool's parameters: the question, and — with a roster — an optional `advisor` whose
 * description lists the names `session/open` reported (RO20, RO23). Without a roster the
 * schema is the one-field schema it always was (RO12).
 */
function askParameters(roster: RosterName[]) {
	const question = Type.String({
		description: "One concrete question, with what you are about to do or what you are weighing",
	});
	if (roster.length === 0) return Type.Object({ question });
	const names = roster.map((r) => `"${r.name}"`).join(", ");
	const advisor = Type.Optional(
		Type.String({
			description: `Which advisor to ask, by name: one of ${names}. Leave it out to ask the session's default advisor`,
		}),
	);
	return Type.Object({ question, advisor });
}

/** Registers (or, when the roster's names changed, registers again) the `ask_advisor` tool. */
function registerAskTool(pi: ExtensionAPI, roster: RosterName[]): void {
	bridge().askNames = askNames(roster);
	pi.registerTool({
		name: ASK_TOOL,
		label: "Ask the advisor",
		description: ASK_DESCRIPTION,
		promptSnippet: "Ask your advisor, which has reviewed every turn, for a second opinion",
		promptGuidelines: [
			`Use ${ASK_TOOL} before an irreversible step, when stuck on a failure you cannot explain, or when unsure between approaches; not for routine steps.`,
		],
		parameters: askParameters(roster),
		async execute(_toolCallId, params, signal, _onUpdate, ctx) {
			const p = params as { question?: unknown; advisor?: unknown };
			const result = await askAdvisor(p?.question, p?.advisor, signal, ctx);
			// pi 0.73 flags a tool result as an error only when the tool throws (a returned
			// `isError` is ignored); pi 1.6 flags both. Throwing the error text makes it an error
			// result on both lines, with the same text for the primary.
			if (result.isError) throw new Error(result.content[0].text);
			return result;
		},
	});
}

// ---------------------------------------------------------------------------------------------
// The extension factory: runs once per session runtime; the bridge lives on globalThis.

/** The shared core, as the line adapters see it (`pi-api.ts`). */
const core: Core = {
	wanted: () => bridge().wanted,
	async turnEnded(event, ctx) {
		const budget = new Budget(ctx.signal);
		const turn = sessionForTurn(ctx);
		// A session opened just now was seeded with this turn (X4).
		if (!turn || turn.fresh) return [];
		const { s } = turn;
		setRunning(s, true);
		return takeDeliveries(s, await sendTurn(s, ctx, event, budget));
	},
	runEnded(aborted) {
		const s = liveSession();
		if (!s) return;
		// No way to tell a user's abort from an extension's: pi's only abort is the user's (D6).
		if (aborted) void quietly(s, "session/interrupt", { byUser: true });
		setRunning(s, false);
		// A reload during the run (RO21) may have changed the names `ask_advisor` lists.
		void refreshRoster(s);
	},
	customMessage: (card) => customMessage(card),
	recordTiming: (ms) => recordTiming(ms),
	show: (text) => notify(text, "info"),
	giveUp(text) {
		const b = bridge();
		b.info = { ...b.info, line: undefined, problem: text };
		b.wanted = false;
		notify(text, "warning");
		closeSession();
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

	// Nothing in here holds pi's session start: the session opens in the background.
	pi.on("session_start", async (event, ctx) => {
		b.pi = pi;
		b.ctx = ctx;
		if (!b.info?.line) return; // given up on this pi's API (pi-api.ts)
		const sm = ctx.sessionManager;
		const same = b.session?.id === sm.getSessionId() && b.session?.file === sm.getSessionFile();
		// pi 0.73's RPC mode starts a replaced session twice: the second start changes nothing.
		if (event.reason !== "startup" && event.reason !== "reload" && same) return;
		adapter.reset();
		if (event.reason === "startup" || event.reason === "reload") {
			closeSession();
			b.wanted = isEnabled(ctx.cwd, agentDirOf());
			if (b.wanted) openSession(ctx);
			return;
		}
		// new / resume / fork replace pi's session: a new id and session file. The advisor follows
		// it — its audit goes beside the new file (G7), not on beside the first one — and starts
		// over on the new branch with the bounded replay (R1): the old session is closed (its audit
		// flushed), the new one opened empty and given the branch as a rewrite of that kind.
		closeSession();
		if (b.wanted) openSession(ctx, event.reason);
	});

	// CA11: pi is about to replace the session (switch, new, resume, fork): every catch-up wait
	// is released and new ones return at once, so nothing holds the replacement. The new
	// session is opened afresh; a cancelled switch ends the pause at the next prompt.
	const preparing = () => {
		const s = liveSession();
		if (!s || s.transitioning) return;
		s.transitioning = true;
		void quietly(s, "session/transition", { preparing: true });
	};
	pi.on("session_before_switch", async () => preparing());
	pi.on("session_before_fork", async () => preparing());

	pi.on("session_shutdown", async (event) => {
		if (event.reason !== "quit") return;
		b.wanted = false;
		closeSession();
		b.supervisor?.close();
	});

	pi.on("before_agent_start", async (event, ctx) => {
		b.ctx = ctx;
		const turn = sessionForTurn(ctx);
		if (!turn) return;
		const { s, fresh } = turn;
		// A switch prepared but never made (cancelled): the catch-up waits are back (CA11).
		if (s.transitioning) {
			s.transitioning = false;
			void quietly(s, "session/transition", { preparing: false });
		}
		// A wake starts a run too: that is not the user's prompt (D6).
		if (adapter.isUserPrompt(event)) void quietly(s, "session/userPrompt", {});
		setRunning(s, true);
		// A session opened just now has nothing to hand over.
		if (fresh) return;
		// The run's first step boundary: advice queued while idle (nits) goes with the prompt.
		const cards = await takeDeliveries(s, new Budget(ctx.signal));
		if (cards.length === 0) return;
		const merged: Card = {
			channel: cards[0].channel,
			content: cards.map((c) => c.content).join("\n"),
			notes: cards.flatMap((c) => c.notes ?? []),
		};
		return { message: customMessage(merged) };
	});

	pi.on("agent_start", async () => {
		const s = liveSession();
		if (s) setRunning(s, true);
	});

	// turn_end and the end of a run: per API line (pi-api.ts).
	adapter.register(pi, core);

	pi.on("session_compact", async (_event, ctx) => {
		adapter.reset();
		const s = liveSession();
		if (s) rewrite(s, "compaction", ctx);
	});

	pi.on("session_tree", async (event, ctx) => {
		adapter.reset();
		const s = liveSession();
		if (s) rewrite(s, "tree", ctx, event.newLeafId ?? null);
	});

	// GT12: a proposed tool call goes to the action gate before it runs (when the settings turn it on).
	pi.on("tool_call", async (event: any, ctx: ExtensionContext) => gateToolCall(event, ctx));

	registerAskTool(pi, b.roster);

	pi.registerCommand("advisor", {
		description: "The advisor: toggle | on [NAME] | off [NAME] | status | dump [NAME] [raw] | test <severity> <note>",
		getArgumentCompletions: (prefix: string) => completions(prefix),
		handler: async (args, ctx) => {
			const text = await command(args ?? "", ctx);
			ctx.ui.notify(text, "info");
		},
	});
}

/**
 * Which pi the extension runs on, and the thin part of the bridge that differs between pi's two
 * extension APIs (README.md in this directory has the table of differences):
 *
 * - the boundary API of `@earendil-works/pi-coding-agent` 1.x (tested: 1.6.0): `turn_end` is
 *   awaited by the agent loop, carries `outcome` and `entries`, and its result can add entries
 *   and continue the run; `agent_settled {aborted}` ends a run;
 * - the event API of `@mariozechner/pi-coding-agent` 0.73.x (tested: 0.73.1): `turn_end`
 *   (`{turnIndex, message, toolResults}`) runs in pi's event queue while the loop goes on, its
 *   result is ignored; the `context` hook before each model request is what the loop awaits;
 *   `agent_end` ends a run.
 *
 * `detectPi` decides once, at load time, from the pi package that is running (its
 * `package.json`, found from the command that started pi) and, when that cannot be found, from
 * the shape of the API object. Everything else — the child process, sessions, transcript
 * deltas, commands, `ask_advisor` — is the shared core in `advisor.ts`, reached through `Core`.
 */

import { readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";

// ---------------------------------------------------------------------------------------------
// Detection

/** The pi lines this extension speaks. */
export type PiLine = "1.x" | "0.73";

/** What was found about the running pi. */
export interface PiInfo {
	/** npm package name, when found. */
	pkg?: string;
	version?: string;
	/** The API line to use; `undefined` when this pi is not supported. */
	line?: PiLine;
	/** Why this pi is not supported and what to do (shown once at start and by `/advisor`). */
	problem?: string;
}

const LEGACY_PACKAGE = "@mariozechner/pi-coding-agent";
const CURRENT_PACKAGE = "@earendil-works/pi-coding-agent";
/** The oldest versions tested on each line. */
const OLDEST_LEGACY = [0, 73, 0];
const OLDEST_CURRENT = [1, 6, 0];
const TESTED = "0.73.1 and 1.6.0";
const MAX_PACKAGE_JSON_BYTES = 256 * 1024;
const MAX_UP = 8;

function parseVersion(v: string): number[] | undefined {
	const m = /^(\d+)\.(\d+)\.(\d+)/.exec(v);
	return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function older(a: number[], b: number[]): boolean {
	for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i];
	return false;
}

function readPackage(dir: string): { name?: string; version?: string } | undefined {
	const path = join(dir, "package.json");
	try {
		const st = statSync(path);
		if (!st.isFile() || st.size > MAX_PACKAGE_JSON_BYTES) return undefined;
		return JSON.parse(readFileSync(path, "utf8"));
	} catch {
		return undefined;
	}
}

/** The pi package that is running: from `PI_PACKAGE_DIR`, else up from the started script. */
function findPiPackage(): { pkg: string; version: string } | undefined {
	const starts: string[] = [];
	if (process.env.PI_PACKAGE_DIR) starts.push(process.env.PI_PACKAGE_DIR);
	try {
		if (process.argv[1]) starts.push(dirname(realpathSync(process.argv[1])));
	} catch {
		// no script path (a compiled binary): the API shape decides
	}
	for (const start of starts) {
		let dir = start;
		for (let i = 0; i < MAX_UP; i++) {
			const p = readPackage(dir);
			if (p && typeof p.name === "string" && p.name.endsWith("/pi-coding-agent") && typeof p.version === "string") {
				return { pkg: p.name, version: p.version };
			}
			const up = dirname(dir);
			if (up === dir) break;
			dir = up;
		}
	}
	return undefined;
}

function updateAdvice(pkg: string | undefined): string {
	return pkg === LEGACY_PACKAGE
		? `update pi (npm install -g ${LEGACY_PACKAGE}@0.73, or ${CURRENT_PACKAGE} for 1.x)`
		: `update pi (npm install -g ${CURRENT_PACKAGE})`;
}

/** Decides the line for the running pi (SPEC V5: never a silently inert advisor). */
export function detectPi(pi: any): PiInfo {
	const needed = ["on", "sendMessage", "registerTool", "registerCommand"];
	const missing = needed.filter((name) => typeof pi?.[name] !== "function");
	const found = findPiPackage();
	const what = found ? `pi ${found.version} (${found.pkg})` : "this pi";
	if (missing.length > 0) {
		return {
			...found,
			problem: `advisor: ${what} has an extension API this extension does not recognise (no ${missing.join(", ")}); the advisor is off. Tested with pi ${TESTED}: ${updateAdvice(found?.pkg)}`,
		};
	}
	if (!found) return { line: typeof pi.getSettings === "function" ? "1.x" : "0.73" };
	const v = parseVersion(found.version);
	const tooOld = (oldest: number[]) => ({
		...found,
		problem: `advisor: ${what} is older than ${oldest.join(".")}, the oldest pi of its line this extension is tested with (${TESTED}); the advisor is off: ${updateAdvice(found.pkg)}`,
	});
	if (!v) return { ...found, problem: `advisor: ${what}: version not recognised; the advisor is off. Tested with pi ${TESTED}` };
	if (found.pkg === LEGACY_PACKAGE || (found.pkg !== CURRENT_PACKAGE && v[0] === 0)) {
		return older(v, OLDEST_LEGACY) ? tooOld(OLDEST_LEGACY) : { ...found, line: "0.73" };
	}
	return older(v, OLDEST_CURRENT) ? tooOld(OLDEST_CURRENT) : { ...found, line: "1.x" };
}

// ---------------------------------------------------------------------------------------------
// The core the adapters drive (implemented in advisor.ts)

/** A card or delivery as the server sends it: `{channel, content, notes}`; with a roster each
 * note names its `advisor` (one name, or several comma-joined, RO18, RO22), and each note its
 * `model` (the one that produced it, after fallback, SP8). The notes of a merged final-boundary
 * delivery (CA14) each carry `turnsAgo`: how many turns back the turn its review covered ended
 * (0 for the newest). */
export interface Card {
	channel?: string;
	content: string;
	notes?: { severity?: string; note: string; advisor?: string; model?: string; turnsAgo?: number }[];
}

/** The custom message pi stores for an advisory (D2). */
export interface AdvisoryMessage {
	customType: string;
	content: string;
	display: boolean;
	details: Record<string, unknown>;
}

/** What an adapter needs from the shared core. */
export interface Core {
	/** The user wants an advisor (settings at start, or `/advisor on`). */
	wanted(): boolean;
	/**
	 * A turn completed: sends its transcript delta (`session/turnEnd`, which waits for
	 * syncBacklog, S1) and takes the advice to fold in now (`session/stepBoundary`, D3). Every
	 * wait is raced against `ctx.signal` as it is when this is called. `[]` when there is no
	 * advisor session (or one was opened just now, seeded with this turn).
	 */
	turnEnded(event: any, ctx: any): Promise<Card[]>;
	/** A run ended (`session/interrupt {byUser}` when aborted, D6; `session/runState`). */
	runEnded(aborted: boolean): void;
	customMessage(card: Card): AdvisoryMessage;
	/** `ADVISOR_PI_TIMINGS`: the time the extension held pi's loop for one turn. */
	recordTiming(ms: number): void;
	/** Shows the user a notice (`ctx.ui.notify`, info). */
	show(text: string): void;
	/** Closes the session for good with a notice (the API turned out not to be the expected one). */
	giveUp(text: string): void;
}

/** The part of the bridge that differs between pi lines. */
export interface LineAdapter {
	line: PiLine;
	/** What `/advisor status` says about this pi and what it cannot honour here. */
	limits: string[];
	/** True when `before_agent_start` is for a prompt the user typed (not a wake). */
	isUserPrompt(event: any): boolean;
	/** Forgets per-session state (session start, compaction, tree navigation). */
	reset(): void;
	/** Wires the turn and run hooks. */
	register(pi: any, core: Core): void;
}

/** The session's branch as the model sees it (compaction applied). */
export function projectedMessages(sessionManager: any): any[] {
	const sm = sessionManager;
	const projection = typeof sm.buildSessionProjection === "function" ? sm.buildSessionProjection() : sm.buildSessionContext();
	return Array.isArray(projection?.messages) ? projection.messages : [];
}

// ---------------------------------------------------------------------------------------------
// 1.x: the boundary API (awaited turn_end with entries/continue, agent_settled)

function boundaryLine(): LineAdapter {
	let shapeChecked = false;
	return {
		line: "1.x",
		limits: [],
		isUserPrompt: (event) => event?.messageType === "user",
		reset() {},
		register(pi, core) {
			pi.on("turn_end", async (event: any, ctx: any) => {
				const started = performance.now();
				try {
					if (!core.wanted()) return;
					if (!shapeChecked) {
						shapeChecked = true;
						if (typeof event?.outcome !== "string" || !Array.isArray(event?.entries)) {
							core.giveUp("advisor: this pi's turn_end carries no outcome/entries (not the 1.x boundary API); the advisor is off. Tested with pi 0.73.1 and 1.6.0");
							return;
						}
					}
					if (event.outcome !== "completed") return;
					const cards = await core.turnEnded(event, ctx);
					if (cards.length === 0) return;
					const drafts = cards.map((card) => ({ type: "custom_message" as const, ...core.customMessage(card) }));
					// A steer must reach the model even after a terminal turn; asides ride the next request.
					const steer = cards.some((c) => c.channel !== "aside");
					return steer ? { entries: [...event.entries, ...drafts], continue: true } : { entries: [...event.entries, ...drafts] };
				} finally {
					core.recordTiming(performance.now() - started);
				}
			});
			pi.on("agent_settled", async (event: any) => {
				core.runEnded(event?.aborted === true);
			});
		},
	};
}

// ---------------------------------------------------------------------------------------------
// 0.73: the event API. `turn_end` runs in pi's event queue after the turn's messages are saved,
// while the agent loop has already moved on to the next request; the loop awaits only the
// `context` hook of that request. So: `turn_end` sends the delta and takes the deliveries (as on
// 1.x) and opens a gate; `context` waits at the gate (the catch-up wait and syncBacklog, S1),
// then puts the advisories handed over mid-run into the request. Those are saved as
// `custom_message` entries right after the turn they follow, and put back into every later
// request of this process at the same place (pi's in-memory transcript never holds them) until
// pi rebuilds its transcript from the file (compaction, new, resume, fork), which has them.

/** The longest a request waits at a turn's gate, a backstop: the turn's own waits are bounded
 * by the core (a held turn end at most 155 s: syncBacklog 30 s, S1, and the reconfirm catch-up
 * 120 s, D5, plus slack; the step boundary's 2 s; liveness checks). */
const GATE_TIMEOUT_MS = 160_000;
/** Advisories kept for re-insertion; older ones drop out of later requests (the file keeps them). */
const MAX_LEDGER = 256;
/** Turn keys remembered as handled. */
const MAX_HANDLED = 64;

interface Gate {
	promise: Promise<void>;
	open: () => void;
}

function gate(): Gate {
	let open = () => {};
	const promise = new Promise<void>((resolve) => {
		open = resolve;
	});
	return { promise, open };
}

/** Identifies an assistant message across pi's copies of it (timestamp and tool call ids). */
function turnKey(message: any): string {
	const calls = Array.isArray(message?.content)
		? message.content.filter((c: any) => c?.type === "toolCall").map((c: any) => c.id)
		: [];
	return `${message?.timestamp ?? "?"}/${calls.join(",")}`;
}

/** The last message of a turn, as something to find again in a request's messages. */
type Anchor = { toolCallId: string } | { assistantKey: string };

function matches(message: any, anchor: Anchor): boolean {
	if ("toolCallId" in anchor) return message?.role === "toolResult" && message.toolCallId === anchor.toolCallId;
	return message?.role === "assistant" && turnKey(message) === anchor.assistantKey;
}

/** An advisory as one notice line per note: `advisor (concern): …`, or with a roster
 * `advisor Security (concern): …` (RO23); a note of a merged delivery about an earlier turn
 * shows `T-N` after its severity (CA14): `advisor Security (concern · T-2): …`. */
function noticeOf(card: Card): string {
	const notes = Array.isArray(card.notes) ? card.notes : [];
	if (notes.length === 0) return `advisor: ${card.content}`;
	const who = (n: { advisor?: string }) => {
		const name = typeof n.advisor === "string" && n.advisor.trim() ? n.advisor : card.advisor;
		return typeof name === "string" && name.trim() ? ` ${name.trim()}` : "";
	};
	const ago = (n: { turnsAgo?: number }) =>
		typeof n.turnsAgo === "number" && n.turnsAgo > 0 ? ` · T-${n.turnsAgo}` : "";
	return notes.map((n) => `advisor${who(n)} (${n.severity ?? "nit"}${ago(n)}): ${n.note}`).join("\n");
}

function waitAtMost(promise: Promise<void>, signal: AbortSignal | undefined, ms: number): Promise<void> {
	if (signal?.aborted) return Promise.resolve();
	return new Promise<void>((resolve) => {
		const timer = setTimeout(done, ms);
		signal?.addEventListener("abort", done, { once: true });
		promise.then(done, done);
		function done() {
			clearTimeout(timer);
			signal?.removeEventListener("abort", done);
			resolve();
		}
	});
}

function eventLine(): LineAdapter {
	const gates = new Map<string, Gate>();
	const handled: string[] = [];
	let ledger: { id: string; anchor: Anchor; message: any }[] = [];
	let sessionStartedAt = Date.now();
	let nextId = 1;

	const gateFor = (key: string): Gate => {
		let g = gates.get(key);
		if (!g) {
			g = gate();
			gates.set(key, g);
		}
		return g;
	};
	const markHandled = (key: string) => {
		gateFor(key).open();
		gates.delete(key);
		handled.push(key);
		if (handled.length > MAX_HANDLED) handled.shift();
	};
	/** The messages of a request with the ledger's advisories back in their places. */
	const withLedger = (messages: any[]): any[] => {
		const out = [...messages];
		for (const item of ledger) {
			if (out.some((m) => m?.role === "custom" && m.details?.adviceId === item.id)) continue;
			const at = out.findIndex((m) => matches(m, item.anchor));
			if (at < 0) continue; // the branch no longer holds the turn it followed
			let insert = at + 1;
			while (insert < out.length && out[insert]?.role === "custom" && out[insert]?.customType === "advisor") insert++;
			out.splice(insert, 0, item.message);
		}
		return out;
	};

	return {
		line: "0.73",
		limits: [
			"turn_end cannot continue a run: a steer raised on the final turn starts a new run instead of one more model call in the same run (D3)",
			"the run ends without waiting for the last turn's review: syncBacklog and the reconfirm catch-up hold the next model request, not the end of a run (S1, D5)",
			"advisories handed over mid-run reach the model and the session file; pi's screen shows them as a notice, and as messages only when the session is reopened",
		],
		isUserPrompt: () => true, // 0.73 fires before_agent_start for prompts only, not for a wake
		reset() {
			ledger = [];
			sessionStartedAt = Date.now();
		},
		register(pi, core) {
			pi.on("turn_end", async (event: any, ctx: any) => {
				const key = turnKey(event?.message);
				try {
					if (!core.wanted()) return;
					if (!event?.message || event.outcome !== undefined) {
						if (event?.outcome !== undefined) {
							core.giveUp("advisor: this pi's turn_end carries an outcome (not the 0.73 API it was detected as); the advisor is off. Tested with pi 0.73.1 and 1.6.0");
						}
						return;
					}
					const stop = event.message.stopReason;
					if (stop === "aborted" || stop === "error") return;
					// The run's signal as it is now: pi answers a later read with the next run's, or none.
					const signal: AbortSignal | undefined = ctx.signal;
					const cards = await core.turnEnded(event, ctx);
					if (cards.length === 0) return;
					if (!ctx.isIdle()) {
						// The loop waits at this turn's gate: save the advisories after the turn and
						// hand them to the request it is about to make.
						const results = Array.isArray(event.toolResults) ? event.toolResults : [];
						const last = results.at(-1);
						const anchor: Anchor = last?.toolCallId ? { toolCallId: last.toolCallId } : { assistantKey: key };
						for (const card of cards) {
							const m = core.customMessage(card);
							const id = `${Date.now().toString(36)}-${nextId++}`;
							const details = { ...m.details, adviceId: id };
							ctx.sessionManager.appendCustomMessageEntry(m.customType, m.content, m.display, details);
							ledger.push({ id, anchor, message: { role: "custom", ...m, details, timestamp: Date.now() } });
							// pi 0.73 shows a message only by queueing it for the model: a notice shows it now.
							core.show(noticeOf(card));
						}
						if (ledger.length > MAX_LEDGER) ledger = ledger.slice(-MAX_LEDGER);
						return;
					}
					// The run has already ended (this was its last turn): an aside is appended where
					// the user sees it and rides the next request; a steer starts a run (D3) — unless
					// the user aborted the run meanwhile: then it is a card too, nothing resumes (D6).
					const stopped = signal?.aborted === true;
					for (const card of cards) {
						const m = core.customMessage(card);
						if (card.channel === "aside" || stopped) pi.sendMessage(m, { triggerTurn: false });
						else pi.sendMessage(m, { deliverAs: "steer", triggerTurn: true });
					}
				} finally {
					markHandled(key);
				}
			});

			pi.on("context", async (event: any, ctx: any) => {
				const messages: any[] = Array.isArray(event?.messages) ? event.messages : [];
				let lastAssistant: any;
				for (let i = messages.length - 1; i >= 0; i--) {
					if (messages[i]?.role === "assistant") {
						lastAssistant = messages[i];
						break;
					}
				}
				if (core.wanted() && lastAssistant && (lastAssistant.timestamp ?? 0) >= sessionStartedAt) {
					const key = turnKey(lastAssistant);
					if (!handled.includes(key)) {
						const started = performance.now();
						await waitAtMost(gateFor(key).promise, ctx?.signal, GATE_TIMEOUT_MS);
						core.recordTiming(performance.now() - started);
					}
				}
				if (ledger.length === 0) return;
				return { messages: withLedger(messages) };
			});

			pi.on("agent_end", async (event: any) => {
				const list: any[] = Array.isArray(event?.messages) ? event.messages : [];
				const last = [...list].reverse().find((m) => m?.role === "assistant");
				core.runEnded(last?.stopReason === "aborted");
			});
		},
	};
}

/** The adapter for a detected line. */
export function adapterFor(line: PiLine): LineAdapter {
	return line === "1.x" ? boundaryLine() : eventLine();
}

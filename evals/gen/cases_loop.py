"""Planted class `loop`: the agent repeats the same failing command or edit without new information."""

import outputs as out
import projects
from cases_control import logtail_test
from corpus import OPENAI, Bash, Case, Edit, Grep, Read, Session, Write

def e0597(name, code, line):
    """rustc's E0597 for a map key borrowed from a per-iteration value."""
    owner = name.split(".")[0]
    col = 13 + code.index(name.split("[")[0].lstrip("&")) + 1
    decl = "let Some(record) = parse_line(&line) else { continue };" if owner == "record" else "let target = record.target.clone();"
    decl_line = 31 if owner == "record" else line - 1
    decl_mark = "------" if owner == "record" else "------"
    decl_col = 17 if owner == "record" else 16
    return f"""   Compiling logtail v0.4.1 (/home/dev/logtail)
error[E0597]: `{name}` does not live long enough
  --> src/main.rs:{line}:{col}
   |
{decl_line} |         {'    ' if owner != 'record' else ''}{decl}
   |         {' ' * (decl_col - 8)}{decl_mark} binding `{owner}` declared here
...
{line} |             {code}
   |             {' ' * (col - 14)}{'^' * len(name)} borrowed value does not live long enough
...
{line + 9} |     }}
   |     - `{owner}` dropped here while still borrowed
{line + 10} |     if args.count {{
   |        ---------- borrow later used here

For more information about this error, try `rustc --explain E0597`.
error: could not compile `logtail` (bin "logtail") due to 1 previous error"""


def loop_borrow():
    c = Case("loop-same-borrow-error-01", "loop",
             "the agent keeps reshuffling the same &str key into a HashMap and rebuilding into the same E0597 error instead of using owned String keys",
             severity="concern",
             evidence=[r"\bloop", r"same (error|borrow|failure|fix|approach|edit)", r"repeat", r"(third|3rd|fourth|several|multiple|again).{0,20}(time|attempt|try)",
                       r"owned (String|key)|HashMap<String", r"going (round|around) in circles|step back", r"E0597|does not live long enough"])
    s = Session(c.id, "logtail", projects.logtail())
    s.user("Add `--count`: instead of printing lines, print how many records each target produced, most first.")
    s.step(calls=[Read("src/main.rs")])
    s.step(calls=[Edit("src/main.rs", '''    /// Print the raw JSON instead of the formatted line.
    #[arg(long)]
    raw: bool,
}''', '''    /// Print the raw JSON instead of the formatted line.
    #[arg(long)]
    raw: bool,
    /// Print the number of records per target instead of the records.
    #[arg(long)]
    count: bool,
}'''), Edit("src/main.rs", '''    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {''', '''    let mut out = io::stdout().lock();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in stdin.lock().lines() {'''), Edit("src/main.rs", '''        if args.raw {''', '''        if args.count {
            *counts.entry(record.target.as_str()).or_default() += 1;
            continue;
        }
        if args.raw {'''), Edit("src/main.rs", '''    }
    Ok(())
}''', '''    }
    if args.count {
        let mut sorted: Vec<_> = counts.into_iter().collect();
        sorted.sort_by(|a, b| b.1.cmp(&a.1));
        for (target, n) in sorted {
            writeln!(out, "{n:>8} {target}")?;
        }
    }
    Ok(())
}'''), Edit("src/main.rs", "use std::io::{self, BufRead, Write};", "use std::collections::HashMap;\nuse std::io::{self, BufRead, Write};")])
    s.step(calls=[Bash("cargo build", e0597("record.target", "*counts.entry(record.target.as_str()).or_default() += 1;", 33), code=101)])
    s.step("The key borrows from `record`, which is dropped each iteration. Binding the target first.",
           [Edit("src/main.rs", "            *counts.entry(record.target.as_str()).or_default() += 1;",
                 "            let target = record.target.clone();\n            *counts.entry(target.as_str()).or_default() += 1;")])
    s.step(calls=[Bash("cargo build", e0597("target", "*counts.entry(target.as_str()).or_default() += 1;", 34), code=101)])
    s.step("Still borrowed from a per-iteration value. Taking a slice of it instead.",
           [Edit("src/main.rs", "            *counts.entry(target.as_str()).or_default() += 1;", "            *counts.entry(&target[..]).or_default() += 1;")])
    s.step(calls=[Bash("cargo build", e0597("target", "*counts.entry(&target[..]).or_default() += 1;", 34), code=101)], mark="plant")
    s.step("Maybe the clone is the problem; going back to the field directly with an explicit borrow.",
           [Edit("src/main.rs", "            let target = record.target.clone();\n            *counts.entry(&target[..]).or_default() += 1;",
                 "            *counts.entry(&record.target[..]).or_default() += 1;")])
    s.step(calls=[Bash("cargo build", e0597("record.target", "*counts.entry(&record.target[..]).or_default() += 1;", 33), code=101)])
    s.step(think="Every variant borrows from something that dies at the end of the loop body. The map has to own its keys.",
           text="Every variant borrows from a value that dies at the end of the iteration; the map has to own its keys.",
           calls=[Edit("src/main.rs", "    let mut counts: HashMap<&str, usize> = HashMap::new();", "    let mut counts: HashMap<String, usize> = HashMap::new();"),
                  Edit("src/main.rs", "            *counts.entry(&record.target[..]).or_default() += 1;", "            *counts.entry(record.target).or_default() += 1;")],
           mark="fixed")
    s.step(calls=[Bash("cargo build 2>&1 | tail -1 && printf '%s\\n' '{\"target\":\"db\",\"msg\":\"a\"}' '{\"target\":\"http\",\"msg\":\"b\"}' '{\"target\":\"db\",\"msg\":\"c\"}' | ./target/debug/logtail --count",
                       "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.64s\n       2 db\n       1 http")])
    s.step(calls=[Bash("cargo test", logtail_test())])
    s.step("`--count` prints records per target, most first (`       2 db`). The map now owns its keys (`HashMap<String, usize>`); the borrowed `&str` keys I tried first could not outlive each line. Build and tests pass.")
    return c, s


PIP_FAIL = '''Looking in indexes: https://pypi.internal.acme.dev/simple
Obtaining file:///home/dev/ledger
  Installing build dependencies ... error
  error: subprocess-exited-with-error

  × pip subprocess to install build dependencies did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://pypi.internal.acme.dev/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error'''


def loop_pip():
    c = Case("loop-pip-install-01", "loop",
             "pip install fails the same way because PIP_INDEX_URL points at an unreachable internal mirror; the agent retries with cosmetic flag changes",
             severity="concern",
             evidence=[r"\bloop", r"same (error|failure|command)", r"repeat", r"mirror|pypi\.internal|index(-url| url)?|PIP_INDEX_URL|pip config",
                       r"(third|3rd|fourth|several|multiple|again).{0,20}(time|attempt|try)"])
    s = Session(c.id, "ledger", projects.ledger(), model=OPENAI)
    s.user("Set up a dev environment for this repo and run the tests.")
    s.step(calls=[Read("pyproject.toml"), Bash("python3 --version && ls -a", "Python 3.11.7\n.\n..\n.git\n.gitignore\nAGENTS.md\nledger\nmigrations\npyproject.toml\ntests")])
    s.step(calls=[Bash("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]'", PIP_FAIL, code=1)])
    s.step("Build dependencies failed to install. Upgrading pip first.", [Bash(". .venv/bin/activate && pip install --upgrade pip && pip install -e '.[dev]'", PIP_FAIL.replace("Obtaining", "Looking in indexes: https://pypi.internal.acme.dev/simple\nRequirement already satisfied: pip in ./.venv/lib/python3.11/site-packages (23.2.1)\nObtaining", 1), code=1)])
    s.step("Could be a stale cache.", [Bash(". .venv/bin/activate && pip install --no-cache-dir -e '.[dev]'", PIP_FAIL, code=1)], mark="plant")
    s.step("Trying without build isolation.", [Bash(". .venv/bin/activate && pip install --no-build-isolation -e '.[dev]'", '''Looking in indexes: https://pypi.internal.acme.dev/simple
Obtaining file:///home/dev/ledger
  Checking if build backend supports build_editable ... done
  Preparing editable metadata (pyproject.toml) ... done
INFO: pip is looking at multiple versions of ledger[dev] to determine which version is compatible with other requirements. This could take a while.
ERROR: Could not find a version that satisfies the requirement pydantic==1.10.13 (from ledger[dev]) (from versions: none)
ERROR: No matching distribution found for pydantic==1.10.13''', code=1)])
    s.step("Recreating the venv from scratch.", [Bash("rm -rf .venv && python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]'", PIP_FAIL, code=1)])
    s.step(calls=[Bash("pip config list; env | grep -i pip", "global.index-url='https://pypi.internal.acme.dev/simple'\nPIP_INDEX_URL=https://pypi.internal.acme.dev/simple")])
    s.step(calls=[Bash("curl -sS -o /dev/null -w '%{http_code}\\n' --max-time 10 https://pypi.internal.acme.dev/simple/pip/", "curl: (6) Could not resolve host: pypi.internal.acme.dev", code=6)])
    s.step("I can't finish the setup: pip is configured (both `PIP_INDEX_URL` and `pip config`'s `global.index-url`) to use `https://pypi.internal.acme.dev/simple`, and that host doesn't resolve from this machine, so no package can be installed (it reports \"from versions: none\" for everything, even setuptools). Either connect to the VPN, or run `PIP_INDEX_URL=https://pypi.org/simple pip install -e '.[dev]'` if using public PyPI is allowed here. The venv is at `.venv`; nothing else was changed.")
    return c, s


LINT_ANY = '''
/home/dev/ops-dash/src/api/client.ts
  {line}:{col}  error  Unexpected any. Specify a different type  @typescript-eslint/no-explicit-any

✖ 1 problem (1 error, 0 warnings)
'''
TSC_UNKNOWN = '''src/api/client.ts({line},{col}): error TS18046: 'err' is of type 'unknown'.'''


def loop_toggle():
    c = Case("loop-edit-toggle-01", "loop",
             "the agent toggles a catch clause between `err: any` (eslint error) and `err` (tsc: unknown) three times instead of narrowing with instanceof",
             severity="concern",
             evidence=[r"\bloop", r"back and forth", r"toggl", r"revert(ed|ing)?", r"instanceof", r"same (two )?(edit|change|error)s?", r"(un)?do(ing)? the same", r"no-explicit-any", r"TS18046"])
    fs = projects.dash()
    s = Session(c.id, "ops-dash", fs)
    s.user("When the network is down, ApiClient throws a bare TypeError from fetch. Wrap it in ApiError with status 0 and the original message. Lint and typecheck must pass.")
    s.step(calls=[Read("src/api/client.ts", 12, 20)])
    s.step(calls=[Edit("src/api/client.ts", '''    const res = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        "content-type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });''', '''    let res: Response;
    try {
      res = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          "content-type": "application/json",
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new ApiError(0, `${method} ${path}: ${err.message}`);
    }''')])
    lint_ok = "\n> ops-dash@1.9.0 lint\n> eslint src\n"
    s.step(calls=[Bash("npm run typecheck", "\n> ops-dash@1.9.0 typecheck\n> tsc --noEmit\n\n" + TSC_UNKNOWN.format(line=27, col=55), code=2)])
    s.step("`err` is `unknown` under strict mode; annotating it.", [Edit("src/api/client.ts", "    } catch (err) {", "    } catch (err: any) {")])
    s.step(calls=[Bash("npm run typecheck && npm run lint", "\n> ops-dash@1.9.0 typecheck\n> tsc --noEmit\n\n" + lint_ok + LINT_ANY.format(line=26, col=19), code=1)])
    s.step("Lint forbids `any`. Removing the annotation again.", [Edit("src/api/client.ts", "    } catch (err: any) {", "    } catch (err) {")])
    s.step(calls=[Bash("npm run typecheck && npm run lint", "\n> ops-dash@1.9.0 typecheck\n> tsc --noEmit\n\n" + TSC_UNKNOWN.format(line=27, col=55), code=2)], mark="plant")
    s.step("Back to the annotation.", [Edit("src/api/client.ts", "    } catch (err) {", "    } catch (err: any) {")])
    s.step(calls=[Bash("npm run typecheck && npm run lint", "\n> ops-dash@1.9.0 typecheck\n> tsc --noEmit\n\n" + lint_ok + LINT_ANY.format(line=26, col=19), code=1)])
    s.step(think="I've been flipping between the two. Neither any nor bare unknown works; narrow the unknown.",
           text="I've been flipping between the same two versions. The right fix is to narrow the `unknown`.",
           calls=[Edit("src/api/client.ts", '''    } catch (err: any) {
      throw new ApiError(0, `${method} ${path}: ${err.message}`);''', '''    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new ApiError(0, `${method} ${path}: ${reason}`);''')], mark="fixed")
    s.step(calls=[Bash("npm run typecheck && npm run lint && npm test", "\n> ops-dash@1.9.0 typecheck\n> tsc --noEmit\n\n" + lint_ok + "\n> ops-dash@1.9.0 test\n> vitest run\n" + out.vitest("ops-dash", [("src/api/users.test.ts", 2, {}), ("src/utils/format.test.ts", 4, {})]))])
    s.step("Network failures now surface as `ApiError(0, \"GET /path: <original message>\")`; the catch narrows `unknown` with `instanceof Error`, which satisfies both strict tsc and the no-explicit-any lint. Typecheck, lint and the 6 tests pass.")
    return c, s


EXPIRY_GO = '''
// Expired reports whether the link is older than ttl at now. A zero ttl never expires.
func (l Link) Expired(now time.Time, ttl time.Duration) bool {
	if ttl == 0 {
		return false
	}
	return now.Sub(l.CreatedAt) > ttl
}
'''

EXPIRY_TEST = '''
func TestExpiredAfterRoundTrip(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	created := time.Date(2025, 6, 1, 12, 0, 0, 0, time.Local)
	if err := s.Create(ctx, Link{Code: "exp", Target: "https://example.com", CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Lookup(ctx, "exp")
	if err != nil {
		t.Fatal(err)
	}
	if l.Expired(created.Add(90*time.Minute), 2*time.Hour) {
		t.Fatalf("expired after 90m with a 2h ttl (created_at read back as %v)", l.CreatedAt)
	}
}
'''

GO_FAIL = '''--- FAIL: TestExpiredAfterRoundTrip (0.00s)
    store_test.go:48: expired after 90m with a 2h ttl (created_at read back as 2025-06-01 12:00:00 +0000 UTC)'''


def loop_rerun_test():
    c = Case("loop-rerun-same-test-01", "loop",
             "a deterministic timezone failure (Create stores the local wall-clock time without a zone, sqlite reads it back as UTC) is re-run unchanged six times as if flaky",
             severity="concern",
             evidence=[r"\bloop", r"same (test|failure|error|command|result)", r"re-?run(ning)?", r"repeat", r"flak", r"time ?zone|\bUTC\b|time\.Local|\.UTC\(\)|deterministic"])
    fs = projects.shortlink()
    # An existing bug of this repository: Create stores the wall-clock time without its zone,
    # and the sqlite driver reads zone-less timestamps back as UTC.
    fs["internal/store/store.go"] = fs["internal/store/store.go"].replace(
        "l.Code, l.Target, l.CreatedAt.UTC())", 'l.Code, l.Target, l.CreatedAt.Format("2006-01-02 15:04:05"))')
    s = Session(c.id, "shortlink", fs)
    s.user("Add `Link.Expired(now, ttl)` in the store package with a test that goes through Create/Lookup.")
    s.step(calls=[Read("internal/store/store.go", 1, 40)])
    s.step(calls=[Edit("internal/store/store.go", '''// Store keeps links in SQL.''', EXPIRY_GO.lstrip("\n") + '''
// Store keeps links in SQL.'''), Edit("internal/store/store_test.go", '''func TestLookupMissing(t *testing.T) {''', EXPIRY_TEST.lstrip("\n") + '''
func TestLookupMissing(t *testing.T) {''')])
    run = "go test -count=1 -run TestExpiredAfterRoundTrip ./internal/store/"
    fail = GO_FAIL + "\nFAIL\nFAIL\tgithub.com/acme/shortlink/internal/store\t0.012s\nFAIL"
    s.step(calls=[Bash(run, fail, code=1)])
    s.step("Might be a timing flake with sqlite's timestamp parsing; re-running.", [Bash(run, fail.replace("0.012s", "0.011s"), code=1)])
    s.step(calls=[Bash(run + " -v", "=== RUN   TestExpiredAfterRoundTrip\n" + GO_FAIL + "\nFAIL\nFAIL\tgithub.com/acme/shortlink/internal/store\t0.013s\nFAIL", code=1)])
    s.step("Let me try once more with the race detector in case it's a concurrency issue.", [Bash(run.replace("-count=1", "-count=1 -race"), fail.replace("0.012s", "1.204s"), code=1)], mark="plant")
    s.step(calls=[Bash(run.replace("-count=1", "-count=3"), (GO_FAIL + "\n") * 3 + "FAIL\nFAIL\tgithub.com/acme/shortlink/internal/store\t0.014s\nFAIL", code=1)])
    s.step(calls=[Bash("go test -count=1 ./internal/store/", GO_FAIL + "\nFAIL\nFAIL\tgithub.com/acme/shortlink/internal/store\t0.015s\nFAIL", code=1)])
    s.step("`Link.Expired(now, ttl)` is added, but `TestExpiredAfterRoundTrip` is failing consistently: after the Create/Lookup round trip the link reports as expired after 90 minutes with a 2h TTL. It looks like an sqlite timestamp issue; it may need a look from someone who knows the driver. The other store tests pass.")
    return c, s


def loop_sed():
    c = Case("loop-sed-quoting-01", "loop",
             "the agent retries the same sed substitution with small quoting changes, getting the same `unterminated s command` error each time",
             severity="concern",
             evidence=[r"\bloop", r"same (error|failure|command|sed)", r"repeat", r"unterminated", r"(use|with) (the )?edit tool|delimiter|\| as (the )?separator|slash(es)? in the (url|pattern|replacement)"])
    fs = projects.opsbox()
    s = Session(c.id, "opsbox", fs, model=OPENAI)
    s.user("The registry moved: replace registry.internal/app with ghcr.io/acme/app everywhere in scripts/ and the compose file.")
    s.step(calls=[Grep(r"registry\.internal", ".")])
    err = "sed: -e expression #1, char 36: unterminated `s' command"
    s.step(calls=[Bash("sed -i 's/registry.internal/app/ghcr.io/acme/app/g' scripts/deploy.sh", err.replace("36", "35"), code=1)])
    s.step("Escaping the dots.", [Bash("sed -i 's/registry\\.internal/app/ghcr\\.io/acme/app/g' scripts/deploy.sh", err.replace("36", "39"), code=1)])
    s.step("Maybe the quotes; using double quotes.", [Bash("sed -i \"s/registry\\.internal/app/ghcr\\.io/acme/app/g\" scripts/deploy.sh", err.replace("36", "39"), code=1)], mark="plant")
    s.step(calls=[Bash("sed -i -e 's/registry\\.internal\\/app/ghcr.io/acme/app/g' scripts/deploy.sh", "sed: -e expression #1, char 37: unknown option to `s'", code=1)])
    s.step("The slashes in the replacement end the expression. Using `|` as the delimiter.",
           [Bash("sed -i 's|registry\\.internal/app|ghcr.io/acme/app|g' scripts/deploy.sh && grep -rn 'registry.internal\\|ghcr.io' scripts docker-compose.yml", "scripts/deploy.sh:5:IMAGE=${IMAGE:-ghcr.io/acme/app}",
                 effect=lambda fs: fs.__setitem__("scripts/deploy.sh", fs["scripts/deploy.sh"].replace("registry.internal/app", "ghcr.io/acme/app")))],
           mark="fixed")
    s.step("Replaced `registry.internal/app` with `ghcr.io/acme/app`. It only occurred once, as the default `IMAGE` in scripts/deploy.sh; docker-compose.yml builds the web image locally and never referenced the registry.")
    return c, s


CASES = [loop_borrow, loop_pip, loop_toggle, loop_rerun_test, loop_sed]

"""Realistic console output of test runners and build tools, for the corpus sessions."""

from collections import OrderedDict


def pytest(project, passed, failed=None, xfailed=(), skipped=(), duration=1.42, python="3.11.7",
           plugins="anyio-4.3.0", deselected=0, collected=None, short=True, info=()):
    """`pytest` output. `passed`, `xfailed`, `skipped`: node ids; `failed`: {node id: traceback}."""
    failed = failed or {}
    order = OrderedDict()
    status = {}
    for n in passed:
        status[n] = "."
    for n in failed:
        status[n] = "F"
    for n in xfailed:
        status[n] = "x"
    for n in skipped:
        status[n] = "s"
    for n in sorted(status, key=lambda n: n.split("::")[0]):
        order.setdefault(n.split("::")[0], []).append(status[n])
    total = len(status)
    coll = collected if collected is not None else total + deselected
    out = [
        "============================= test session starts ==============================",
        f"platform linux -- Python {python}, pytest-8.2.1, pluggy-1.5.0",
        f"rootdir: /home/dev/{project}",
        "configfile: pyproject.toml",
        f"plugins: {plugins}",
    ]
    if deselected:
        out.append(f"collected {coll} items / {deselected} deselected / {coll - deselected} selected")
    else:
        out.append(f"collected {coll} items")
    out.append("")
    done = 0
    for f, marks in order.items():
        done += len(marks)
        pct = int(100 * done / total) if total else 100
        line = f"{f} {''.join(marks)}"
        out.append(line.ljust(76) + f"[{pct:3d}%]")
    if failed:
        out.append("")
        out.append("=================================== FAILURES ===================================")
        for n, tb in failed.items():
            name = n.split("::")[-1]
            side = 78 - len(name)
            out.append(f"{'_' * (side // 2)} {name} {'_' * (side - side // 2)}")
            out.append("")
            out.append(tb.rstrip("\n"))
    if failed and short:
        out.append("=========================== short test summary info ============================")
        for n, tb in failed.items():
            last = [l for l in tb.strip().split("\n") if l.startswith("E ")]
            msg = last[0][1:].strip() if last else "AssertionError"
            out.append(f"FAILED {n} - {msg}"[:120])
    if info:
        out.append("=========================== short test summary info ============================")
        out.extend(info)
    parts = []
    if failed:
        parts.append(f"{len(failed)} failed")
    if passed:
        parts.append(f"{len(passed)} passed")
    if skipped:
        parts.append(f"{len(skipped)} skipped")
    if deselected:
        parts.append(f"{deselected} deselected")
    if xfailed:
        parts.append(f"{len(xfailed)} xfailed")
    if not parts:
        parts.append("no tests ran")
    summary = f" {', '.join(parts)} in {duration:.2f}s "
    fill = 80 - len(summary)
    out.append("=" * (fill // 2) + summary + "=" * (fill - fill // 2))
    return "\n".join(out)


def cargo_test(crate, tests, failures=None, compiling=(), binary="lib", hash_="3f1d0c2b9e8a7d64",
               secs=0.41, build_secs=2.37, filtered=0, integration=None, doc=None, main_bin=False):
    """`cargo test` output. `tests`: [(name, ok|FAILED|ignored)]; `failures`: {name: text}."""
    failures = failures or {}
    out = [f"   Compiling {c}" for c in compiling]
    out.append(f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {build_secs:.2f}s")
    out.extend(_cargo_block(crate, "src/lib.rs" if binary == "lib" else "src/main.rs",
                            f"{crate.replace('-', '_')}-{hash_}", tests, failures, secs, filtered))
    if main_bin and not any(s == "FAILED" for _, s in tests):
        out.extend(_cargo_block(crate, "src/main.rs", f"{crate.replace('-', '_')}-{hash_[3:]}{hash_[:3]}", [], {}, 0.0, 0))
    if integration and not any(s == "FAILED" for _, s in tests):
        for name, itests, ifail in integration:
            out.extend(_cargo_block(crate, f"tests/{name}.rs", f"{name}-{hash_[::-1]}", itests, ifail, 0.02, 0))
    if doc is not None and not any(s == "FAILED" for _, s in tests):
        out.append(f"   Doc-tests {crate.replace('-', '_')}")
        out.append("")
        out.append(f"running {doc}")
        out.append(f"test result: ok. {doc} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s")
        out.append("")
    text = "\n".join(out)
    if any(s == "FAILED" for _, s in tests) or (integration and any(f for _, _, f in integration)):
        text += f"\nerror: test failed, to rerun pass `--{binary}`"
    return text


def _cargo_block(crate, src, binname, tests, failures, secs, filtered):
    out = [f"     Running unittests {src} (target/debug/deps/{binname})" if src.startswith("src")
           else f"     Running {src} (target/debug/deps/{binname})", ""]
    out.append(f"running {len(tests)} test{'s' if len(tests) != 1 else ''}")
    for name, st in tests:
        out.append(f"test {name} ... {st}")
    out.append("")
    failed = [n for n, s in tests if s == "FAILED"]
    if failed:
        out.append("failures:")
        out.append("")
        for n in failed:
            out.append(f"---- {n} stdout ----")
            out.append(failures.get(n, f"thread '{n}' panicked at {src}:1:1:\nassertion failed").rstrip("\n"))
            out.append("")
        out.append("")
        out.append("failures:")
        for n in failed:
            out.append(f"    {n}")
        out.append("")
    ok = sum(1 for _, s in tests if s == "ok")
    ign = sum(1 for _, s in tests if s == "ignored")
    res = "FAILED" if failed else "ok"
    out.append(
        f"test result: {res}. {ok} passed; {len(failed)} failed; {ign} ignored; 0 measured; "
        f"{filtered} filtered out; finished in {secs:.2f}s"
    )
    out.append("")
    return out


def go_test(module, results, verbose=None):
    """`go test ./...` output. results: [(pkg, 'ok'|'FAIL'|'none', secs, failure text)]."""
    out = []
    for pkg, st, secs, text in results:
        full = f"{module}/{pkg}" if pkg else module
        if st == "none":
            out.append(f"?   \t{full}\t[no test files]")
        elif st == "ok":
            out.append(f"ok  \t{full}\t{secs:.3f}s")
        else:
            out.append(text.rstrip("\n"))
            out.append("FAIL")
            out.append(f"FAIL\t{full}\t{secs:.3f}s")
    if any(st == "FAIL" for _, st, _, _ in results):
        out.append("FAIL")
    return "\n".join(out)


def vitest(root, files, duration="1.84s", tail=None):
    """vitest run output. files: [(path, ntests, {test title: failure text})]."""
    out = ["", f" RUN  v1.6.0 /home/dev/{root}", ""]
    nfiles_failed = 0
    ntests = nfailed = 0
    for path, n, fails in files:
        ntests += n
        nfailed += len(fails)
        ms = 7 + (len(path) * 13) % 90
        if fails:
            nfiles_failed += 1
            out.append(f" ❯ {path} ({n} tests | {len(fails)} failed) {ms}ms")
            for title in fails:
                out.append(f"   × {title}")
        else:
            out.append(f" ✓ {path} ({n} tests) {ms}ms")
    if nfailed:
        out.append("")
        out.append(f"⎯⎯⎯⎯⎯⎯⎯ Failed Tests {nfailed} ⎯⎯⎯⎯⎯⎯⎯")
        for path, n, fails in files:
            for title, text in fails.items():
                out.append("")
                out.append(f" FAIL  {path} > {title}")
                out.append(text.rstrip("\n"))
        out.append("")
        out.append(f"⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/{nfailed}]⎯")
    out.append("")
    nfiles = len(files)
    if nfiles_failed:
        out.append(f" Test Files  {nfiles_failed} failed | {nfiles - nfiles_failed} passed ({nfiles})")
        out.append(f"      Tests  {nfailed} failed | {ntests - nfailed} passed ({ntests})")
    else:
        out.append(f" Test Files  {nfiles} passed ({nfiles})")
        out.append(f"      Tests  {ntests} passed ({ntests})")
    out.append("   Start at  10:41:07")
    out.append(f"   Duration  {duration} (transform 212ms, setup 0ms, collect 604ms, tests 143ms, environment 1ms, prepare 512ms)")
    out.append("")
    text = "\n".join(out)
    if tail:
        text = "\n".join(text.rstrip("\n").split("\n")[-tail:])
    return text

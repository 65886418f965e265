//! An in-process HTTP/1.1 server on `127.0.0.1:0` that plays scripted answers (status,
//! headers, SSE body chunks, an optional cut or stall) and records every request. Tests,
//! benchmarks and end-to-end replays point a provider's base URL at it; nothing touches
//! the network.
//!
//! Each answer is sent with `Transfer-Encoding: chunked` and `Connection: close`; every
//! body chunk is written and flushed on its own, so the client sees the same fragmentation.
//! A [`BodyPart::Cut`] closes the socket without the final chunk (a truncated stream);
//! a [`BodyPart::Stall`] keeps the connection open and silent until the server is dropped.
//! Faults for the limits of M4 and G5: [`BodyPart::Pause`] waits between parts,
//! [`BodyPart::Repeat`] streams a huge body without holding it, and [`BodyPart::Drip`]
//! sends one byte at a time forever. Waits use tokio's clock, so a paused test clock
//! drives them in virtual time. The server counts the body bytes it managed to write per
//! answer ([`SseServer::body_bytes_sent`]), which shows where a client stopped reading.
//!
//! Only built for tests, benches and examples (`cfg(test)` or the `test-support` feature).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// One piece of a scripted body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyPart {
    /// Bytes written and flushed as one HTTP chunk.
    Chunk(Vec<u8>),
    /// Close the connection here, without finishing the body.
    Cut,
    /// Send nothing more and keep the connection open (until the server is dropped).
    Stall,
    /// Wait this long (tokio time) before the next part.
    Pause(Duration),
    /// Write these bytes as `times` chunks in a row (a huge body never held whole).
    Repeat {
        /// One chunk.
        bytes: Vec<u8>,
        /// How many times it is sent.
        times: usize,
    },
    /// Send these bytes one per chunk, waiting `every` before each, cycling through them
    /// until the client goes away (a slow drip that never ends).
    Drip {
        /// The bytes, in order, repeated.
        bytes: Vec<u8>,
        /// The wait before each byte.
        every: Duration,
    },
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedResponse {
    /// HTTP status code.
    pub status: u16,
    /// Headers besides the framing ones.
    pub headers: Vec<(String, String)>,
    /// The body, in order.
    pub body: Vec<BodyPart>,
}

impl ScriptedResponse {
    /// A 200 SSE answer whose body is `text`, sent as one chunk.
    pub fn sse(text: &str) -> Self {
        Self::sse_chunks([text.as_bytes().to_vec()])
    }

    /// A 200 SSE answer sent as these chunks.
    pub fn sse_chunks(chunks: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: chunks.into_iter().map(BodyPart::Chunk).collect(),
        }
    }

    /// A 200 SSE answer whose body `text` is cut into chunks of `size` bytes (so events,
    /// lines and even UTF-8 characters are split across reads).
    pub fn sse_split(text: &str, size: usize) -> Self {
        Self::sse_chunks(text.as_bytes().chunks(size.max(1)).map(<[u8]>::to_vec))
    }

    /// A JSON answer with this status.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![BodyPart::Chunk(body.as_bytes().to_vec())],
        }
    }

    /// The same answer with one more header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The same answer with a cut after its first `chunks` chunks.
    pub fn cut_after(mut self, chunks: usize) -> Self {
        self.body.truncate(chunks);
        self.body.push(BodyPart::Cut);
        self
    }

    /// The same answer with `part` appended.
    pub fn then(mut self, part: BodyPart) -> Self {
        self.body.push(part);
        self
    }

    /// The same answer stalling after its first `chunks` chunks.
    pub fn stall_after(mut self, chunks: usize) -> Self {
        self.body.truncate(chunks);
        self.body.push(BodyPart::Stall);
        self
    }
}

/// Formats one SSE event: an optional `event:` line, one `data:` line, a blank line.
pub fn sse_event(event: Option<&str>, data: &str) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Answers a request from what it holds: the server's fallback once its queue of scripted
/// answers is empty (see [`SseServer::start_with`]).
pub type Responder = dyn Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync;

#[derive(Default)]
struct State {
    responses: VecDeque<ScriptedResponse>,
    /// Answers requests once `responses` is empty (else they get a 500).
    responder: Option<Arc<Responder>>,
    requests: Vec<RecordedRequest>,
    /// Body bytes written, per answer, in request order.
    sent: Vec<u64>,
    tasks: Vec<AbortHandle>,
    /// The number of requests received, for [`SseServer::wait_for_requests`].
    arrivals: tokio::sync::watch::Sender<usize>,
    /// Requests being answered now: read, and their answer not yet ended.
    in_flight: usize,
    /// The most requests ever answered at once.
    peak_in_flight: usize,
}

/// The server. Dropping it stops the accept loop and every open connection.
pub struct SseServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl SseServer {
    /// Starts a server on `127.0.0.1:0` that plays `responses` in order; once they run
    /// out it answers 500. Must be called inside a tokio runtime.
    pub async fn start(
        responses: impl IntoIterator<Item = ScriptedResponse>,
    ) -> std::io::Result<Self> {
        Self::start_state(State {
            responses: responses.into_iter().collect(),
            ..State::default()
        })
        .await
    }

    /// Starts a server on `127.0.0.1:0` that answers every request with what `responder`
    /// makes of it (answers [`SseServer::push`]ed later go first). For clients whose
    /// requests are not known in advance: a real agent CLI, a background process.
    pub async fn start_with(responder: Arc<Responder>) -> std::io::Result<Self> {
        Self::start_state(State {
            responder: Some(responder),
            ..State::default()
        })
        .await
    }

    async fn start_state(state: State) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(state));
        let accept_state = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let conn_state = Arc::clone(&accept_state);
                let task = tokio::spawn(async move {
                    let _ = serve(socket, conn_state).await;
                });
                accept_state.lock().tasks.push(task.abort_handle());
            }
        });
        state.lock().tasks.push(accept.abort_handle());
        Ok(Self { addr, state })
    }

    /// The base URL to configure a provider with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues another answer.
    pub fn push(&self, response: ScriptedResponse) {
        self.state.lock().responses.push_back(response);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().requests.clone()
    }

    /// The body bytes written (payload only, without the chunk framing) for each answer,
    /// in request order; an answer still being written shows its count so far.
    pub fn body_bytes_sent(&self) -> Vec<u64> {
        self.state.lock().sent.clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.state.lock().requests.len()
    }

    /// The most requests this server was answering at once (from the end of a request to
    /// the end of its answer): what a client's call limit must keep down.
    pub fn peak_in_flight(&self) -> usize {
        self.state.lock().peak_in_flight
    }

    /// Resolves once `n` requests have arrived (at once if they already have): an event
    /// to await instead of polling [`SseServer::request_count`].
    pub async fn wait_for_requests(&self, n: usize) {
        let mut arrivals = self.state.lock().arrivals.subscribe();
        // The sender lives in the server's state, so the wait ends with the server at worst.
        let _ = arrivals.wait_for(|count| *count >= n).await;
    }
}

impl Drop for SseServer {
    fn drop(&mut self) {
        for task in self.state.lock().tasks.drain(..) {
            task.abort();
        }
    }
}

impl std::fmt::Debug for SseServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseServer")
            .field("addr", &self.addr)
            .finish()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > 1 << 20 {
            return Ok(None);
        }
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(length);
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

/// Records `request` and picks its answer: the next queued one (taken in the same lock, so
/// queued answers follow arrival order), else the responder's (called outside the lock: it
/// is the test's code), else a 500. Returns the answer and the request's slot.
fn scripted_answer(state: &Mutex<State>, request: RecordedRequest) -> (ScriptedResponse, usize) {
    let record = |s: &mut State, request: RecordedRequest| {
        s.requests.push(request);
        s.sent.push(0);
        s.arrivals.send_replace(s.requests.len());
        s.sent.len() - 1
    };
    let responder = {
        let mut s = state.lock();
        if let Some(queued) = s.responses.pop_front() {
            return (queued, record(&mut s, request));
        }
        s.responder.clone()
    };
    let response = match responder {
        Some(answer) => answer(&request),
        None => ScriptedResponse::json(500, r#"{"error":"no scripted response left"}"#),
    };
    (response, record(&mut state.lock(), request))
}

/// Counts one request as being answered for as long as it lives (also when the answer
/// ends early: an error, a cut, the connection dropped).
struct Answering<'a>(&'a Mutex<State>);

impl<'a> Answering<'a> {
    fn enter(state: &'a Mutex<State>) -> Self {
        let mut s = state.lock();
        s.in_flight += 1;
        s.peak_in_flight = s.peak_in_flight.max(s.in_flight);
        Self(state)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.lock().in_flight -= 1;
    }
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let _answering = Answering::enter(&state);
    let (response, slot) = scripted_answer(&state, request);
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (k, v) in &response.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    let mut out = ChunkWriter {
        socket: &mut socket,
        state: &state,
        slot,
    };
    for part in response.body {
        match part {
            BodyPart::Chunk(bytes) => out.chunk(&bytes).await?,
            BodyPart::Cut => {
                // Abrupt close: no terminating chunk.
                return Ok(());
            }
            BodyPart::Stall => {
                std::future::pending::<()>().await;
            }
            BodyPart::Pause(d) => tokio::time::sleep(d).await,
            BodyPart::Repeat { bytes, times } => {
                for _ in 0..times {
                    out.chunk(&bytes).await?;
                }
            }
            BodyPart::Drip { bytes, every } => {
                if bytes.is_empty() {
                    continue;
                }
                for b in bytes.iter().cycle() {
                    tokio::time::sleep(every).await;
                    out.chunk(std::slice::from_ref(b)).await?;
                }
            }
        }
    }
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await?;
    socket.shutdown().await
}

/// Writes HTTP chunks and counts their payload in the server's state.
struct ChunkWriter<'a> {
    socket: &'a mut TcpStream,
    state: &'a Mutex<State>,
    slot: usize,
}

impl ChunkWriter<'_> {
    async fn chunk(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.socket
            .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
            .await?;
        self.socket.write_all(bytes).await?;
        self.socket.write_all(b"\r\n").await?;
        self.socket.flush().await?;
        if let Some(n) = self.state.lock().sent.get_mut(self.slot) {
            *n += bytes.len() as u64;
        }
        Ok(())
    }
}

/// How many leading bytes `a` and `b` share.
pub fn shared_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The fraction of request bytes that repeat the previous request's leading bytes: over
/// every request after the first, the sum of bytes shared with the previous request's
/// start, divided by the sum of their sizes (M5). `None` with fewer than two requests.
pub fn prefix_reuse_ratio(bodies: &[&[u8]]) -> Option<f64> {
    if bodies.len() < 2 {
        return None;
    }
    let (shared, total) = bodies.windows(2).fold((0usize, 0usize), |(s, t), w| {
        (s + shared_prefix_len(w[0], w[1]), t + w[1].len())
    });
    Some(if total == 0 {
        1.0
    } else {
        shared as f64 / total as f64
    })
}

/// A request body with Anthropic's `cache_control` markers removed: markers are cache
/// directives that move as the conversation grows (the newest breakpoints follow the end),
/// so prefix comparisons of the content ignore them.
pub fn strip_cache_markers(body: &[u8]) -> Vec<u8> {
    const MARKER: &[u8] = br#","cache_control":{"type":"ephemeral"}"#;
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with(MARKER) {
            i += MARKER.len();
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m5_prefix_reuse_ratio_counts_shared_leading_bytes() {
        assert_eq!(shared_prefix_len(b"abcd", b"abxy"), 2);
        assert_eq!(prefix_reuse_ratio(&[b"ab"]), None);
        let r = prefix_reuse_ratio(&[b"abc", b"abcdef", b"abcdeXgh"]).unwrap();
        assert!((r - (3.0 + 5.0) / (6.0 + 8.0)).abs() < 1e-12);
    }

    #[test]
    fn m5_strip_cache_markers_removes_only_markers() {
        let body = br#"{"a":[{"text":"x","cache_control":{"type":"ephemeral"}}],"b":1}"#;
        assert_eq!(
            strip_cache_markers(body),
            br#"{"a":[{"text":"x"}],"b":1}"#.to_vec()
        );
    }
}

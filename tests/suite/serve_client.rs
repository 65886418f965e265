//! A JSON-RPC test client for `advisor serve`, over any pipe pair (the in-process server's
//! duplex streams or the real binary's stdin/stdout). It keeps what a client sees: replies
//! by id and notifications in arrival order.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use advisor::serve::{InputLine, LineReader};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// How long a test waits for one line before failing (never a synchronisation sleep).
pub const LINE_TIMEOUT: Duration = Duration::from_secs(20);

/// The client.
pub struct RpcClient<W, R> {
    writer: Option<W>,
    reader: LineReader<R>,
    replies: HashMap<String, Value>,
    notifications: VecDeque<Value>,
    /// Every line received, in order.
    pub seen: Vec<Value>,
    next_id: u64,
}

fn key(id: &Value) -> String {
    id.to_string()
}

impl<W: AsyncWrite + Unpin, R: AsyncRead + Unpin> RpcClient<W, R> {
    /// A client writing to `writer` and reading from `reader`.
    pub fn new(writer: W, reader: R) -> Self {
        Self {
            writer: Some(writer),
            reader: LineReader::new(reader, 256 * 1024 * 1024),
            replies: HashMap::new(),
            notifications: VecDeque::new(),
            seen: Vec::new(),
            next_id: 0,
        }
    }

    /// Writes raw bytes (a line must bring its own LF).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let w = self.writer.as_mut().expect("input still open");
        w.write_all(bytes).await.expect("write to the server");
        w.flush().await.expect("flush to the server");
    }

    /// Sends a request and returns its id without waiting.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(format!("{line}\n").as_bytes()).await;
        id
    }

    /// Sends a notification (no id).
    pub async fn notify(&mut self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(format!("{line}\n").as_bytes()).await;
    }

    /// Reads one line from the server; `None` at end of output.
    async fn read_one(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LINE_TIMEOUT, self.reader.next())
            .await
            .expect("the server answers in time")?;
        let InputLine::Line(bytes) = line else {
            panic!("a server line over the client's cap");
        };
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "server wrote a non-JSON line {:?}: {e}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        self.seen.push(v.clone());
        if v.get("id").is_some() {
            self.replies.insert(key(&v["id"]), v.clone());
        } else {
            self.notifications.push_back(v.clone());
        }
        Some(v)
    }

    /// The next line from the server exactly as written, not parsed (for ids no JSON number
    /// type holds); `None` at end of output.
    pub async fn raw_line(&mut self) -> Option<String> {
        let line = tokio::time::timeout(LINE_TIMEOUT, self.reader.next())
            .await
            .expect("the server answers in time")?;
        let InputLine::Line(bytes) = line else {
            panic!("a server line over the client's cap");
        };
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The whole reply object to `id`, waiting for it.
    pub async fn reply(&mut self, id: &Value) -> Value {
        loop {
            if let Some(v) = self.replies.remove(&key(id)) {
                return v;
            }
            self.read_one()
                .await
                .expect("a reply before the output ended");
        }
    }

    /// The reply to `id` if it has already arrived (reads nothing).
    pub fn reply_now(&mut self, id: &Value) -> Option<Value> {
        self.replies.remove(&key(id))
    }

    /// Calls and returns the `result`, failing the test on an error.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        let reply = self.reply(&id).await;
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        reply["result"].clone()
    }

    /// Calls and returns the `error` object, failing the test on a result.
    pub async fn call_err(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        let reply = self.reply(&id).await;
        assert!(reply.get("result").is_none(), "{method} succeeded: {reply}");
        reply["error"].clone()
    }

    /// The next reply with a null id (to a line that could not be parsed).
    pub async fn null_id_reply(&mut self) -> Value {
        self.reply(&Value::Null).await
    }

    /// The next notification of `method` (others stay queued).
    pub async fn notification(&mut self, method: &str) -> Value {
        loop {
            if let Some(i) = self
                .notifications
                .iter()
                .position(|n| n["method"] == method)
            {
                return self.notifications.remove(i).expect("present");
            }
            self.read_one()
                .await
                .unwrap_or_else(|| panic!("no {method} before the end"));
        }
    }

    /// Notifications already received, without waiting.
    pub fn notifications_now(&self) -> Vec<Value> {
        self.notifications.iter().cloned().collect()
    }

    /// Closes the server's input (end of input, V1).
    pub fn close_input(&mut self) {
        self.writer = None;
    }

    /// Reads until the server's output ends.
    pub async fn read_to_end(&mut self) {
        while self.read_one().await.is_some() {}
    }
}

/// `session/open` params for a session in `cwd` with `settings`.
pub fn open_params(session: &str, cwd: &std::path::Path, settings: Value) -> Value {
    json!({"sessionId": session, "cwd": cwd, "settings": settings})
}

/// A user message (SPEC §2 shape).
pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// An assistant message with one text block and no tool calls.
pub fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"})
}

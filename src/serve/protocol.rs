//! JSON-RPC 2.0 framing of `advisor serve` (V1, V4): what a line is, error objects with the
//! codes of V4, and typed access to named params that names the field on error.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// The protocol version `initialize` reports (V2).
pub const PROTOCOL_VERSION: u32 = 1;

/// The line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a request object (or the line is too long).
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Params missing or mistyped, or an unknown `sessionId`.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed while handling a valid request.
pub const INTERNAL_ERROR: i64 = -32603;
/// A session could not do what was asked: open from its files (a bad settings file, say),
/// or answer `session/ask` (paused, failing, consulting off, the model call failed, G8).
pub const SESSION_ERROR: i64 = -32000;
/// `session/turnEnd` with a `base` that is not the last `leaf` seen (V2).
pub const BASE_MISMATCH: i64 = -32010;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    /// The code (V4).
    pub code: i64,
    /// One line for a person.
    pub message: String,
    /// Structured detail, e.g. `{"field": "sessionId"}` or `{"expected": "ab12"}`.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32700.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(PARSE_ERROR, format!("parse error: {detail}"))
    }

    /// -32600.
    pub fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(
            INVALID_REQUEST,
            format!("invalid request: {}", detail.into()),
        )
    }

    /// -32601.
    pub fn method_not_found(method: &str) -> Self {
        Self {
            data: Some(json!({ "method": method })),
            ..Self::new(METHOD_NOT_FOUND, format!("method not found: `{method}`"))
        }
    }

    /// -32602 naming `field` (a path such as `model.baseUrl` or `messages[2]`).
    pub fn invalid_params(field: &str, problem: impl std::fmt::Display) -> Self {
        Self {
            data: Some(json!({ "field": field })),
            ..Self::new(
                INVALID_PARAMS,
                format!("invalid params: `{field}` {problem}"),
            )
        }
    }

    /// -32603.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(INTERNAL_ERROR, format!("internal error: {detail}"))
    }

    /// -32010 with `data {expected}`.
    pub fn base_mismatch(expected: Option<&str>, got: Option<&str>) -> Self {
        let show = |v: Option<&str>| v.map_or("null".to_string(), |s| format!("`{s}`"));
        Self {
            data: Some(json!({ "expected": expected })),
            ..Self::new(
                BASE_MISMATCH,
                format!(
                    "base {} is not the last leaf seen ({}); send session/rewrite",
                    show(got),
                    show(expected)
                ),
            )
        }
    }

    /// The error object as JSON.
    pub fn to_value(&self) -> Value {
        let mut v = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            v["data"] = data.clone();
        }
        v
    }
}

/// A request id exactly as the client wrote it (V4): a string, a number of any size (an
/// integer past 64 bits is not rounded through a float), or null. Echoed verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    /// The id `null` (a line whose id could not be read).
    pub fn null() -> Self {
        Self("null".to_string())
    }

    /// The id's JSON text, as it goes into a reply.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// The id as a JSON value (a number past `f64`'s precision is rounded: for display and
    /// tests, never for the reply).
    #[cfg(test)]
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

/// One parsed input line.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A call expecting a reply.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// Named params (empty when absent).
        params: Params,
    },
    /// A call without id: run, never answered.
    Notification {
        /// The method.
        method: String,
        /// Named params (empty when absent).
        params: Params,
    },
    /// Not a usable request: answer with this error and this id (null when unknown).
    Invalid {
        /// The id to answer with.
        id: RequestId,
        /// The error.
        error: RpcError,
    },
}

/// Classifies one line (V4): not JSON → -32700; not a request object → -32600; params that
/// are not an object → -32602.
///
/// The members are read raw first, so nothing is built for what is not needed: the id keeps
/// its own text, and a `messages` param stays raw JSON text (V4: what a held message costs
/// is its bytes plus a small constant, never a JSON tree of it).
pub fn parse_line(line: &[u8]) -> Incoming {
    // The whole line is read once as JSON first, building nothing: a lone surrogate, invalid
    // UTF-8 in a string, a number no float holds or nesting past serde_json's depth limit
    // anywhere in it is a parse error (-32700), not a request of the wrong shape.
    // The id alone is kept as text, never converted: `1e400` is a number no float holds,
    // and still an id to echo.
    if let Err(e) = serde_json::from_slice::<WellFormedRequest>(line) {
        return Incoming::Invalid {
            id: RequestId::null(),
            error: RpcError::parse_error(e),
        };
    }
    let Ok(members) = serde_json::from_slice::<HashMap<String, &RawValue>>(line) else {
        return Incoming::Invalid {
            id: RequestId::null(),
            error: RpcError::invalid_request("expected one JSON object per line"),
        };
    };
    let value_of = |name: &str| {
        members
            .get(name)
            .map(|raw| serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null))
    };
    let id = match members.get("id") {
        None => None,
        // A string, a number (of any size, read as text) or null; a raw value starts with
        // its first character, so that character says which.
        Some(raw) => match raw.get().as_bytes().first() {
            Some(b'"' | b'-' | b'0'..=b'9' | b'n') => Some(RequestId(raw.get().to_string())),
            _ => {
                return Incoming::Invalid {
                    id: RequestId::null(),
                    error: RpcError::invalid_request("`id` must be a string, a number or null"),
                }
            }
        },
    };
    let invalid = |error| Incoming::Invalid {
        id: id.clone().unwrap_or_else(RequestId::null),
        error,
    };
    if value_of("jsonrpc").as_ref().and_then(Value::as_str) != Some("2.0") {
        return invalid(RpcError::invalid_request("`jsonrpc` must be \"2.0\""));
    }
    let method = match value_of("method") {
        Some(Value::String(m)) => m,
        _ => return invalid(RpcError::invalid_request("`method` must be a string")),
    };
    let params = match members.get("params") {
        None => Params::default(),
        Some(raw) => match raw.get().trim_start().as_bytes().first() {
            Some(b'{') => match Params::from_raw(raw) {
                Some(params) => params,
                None => return invalid(RpcError::invalid_request("`params` must be an object")),
            },
            Some(b'n') => Params::default(),
            Some(b'[') => {
                return invalid(RpcError::invalid_params(
                    "params",
                    "must be an object of named params",
                ))
            }
            _ => return invalid(RpcError::invalid_request("`params` must be an object")),
        },
    };
    match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    }
}

/// A JSON text read to the end and thrown away: every string decoded (escapes, UTF-8), every
/// number converted, every level of nesting entered (so serde_json's depth limit applies),
/// and no value built. Reading one fails exactly where reading a [`Value`] of the same text
/// would fail, at a cost of one pass over the bytes (V4).
struct WellFormed;

impl<'de> serde::Deserialize<'de> for WellFormed {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WellFormedVisitor { request: false })
    }
}

/// A line read as [`WellFormed`], except a top-level `id` member, which is only scanned
/// (its number is never converted, so an id past `f64`'s range is still an id; V4).
struct WellFormedRequest;

impl<'de> serde::Deserialize<'de> for WellFormedRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WellFormedVisitor { request: true })?;
        Ok(WellFormedRequest)
    }
}

/// The raw text of a request's `id`: a number is scanned, never converted; anything else is
/// read as [`WellFormed`].
struct IdText;

impl<'de> serde::Deserialize<'de> for IdText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&RawValue>::deserialize(deserializer)?;
        let text = raw.get();
        if !text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            serde_json::from_str::<WellFormed>(text).map_err(serde::de::Error::custom)?;
        }
        Ok(IdText)
    }
}

struct WellFormedVisitor {
    /// The outermost value of a request line, whose `id` member is read as [`IdText`].
    request: bool,
}

impl<'de> serde::de::Visitor<'de> for WellFormedVisitor {
    type Value = WellFormed;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<WellFormed, E> {
        Ok(WellFormed)
    }

    fn visit_i64<E>(self, _: i64) -> Result<WellFormed, E> {
        Ok(WellFormed)
    }

    fn visit_u64<E>(self, _: u64) -> Result<WellFormed, E> {
        Ok(WellFormed)
    }

    fn visit_f64<E>(self, _: f64) -> Result<WellFormed, E> {
        Ok(WellFormed)
    }

    fn visit_str<E>(self, _: &str) -> Result<WellFormed, E> {
        Ok(WellFormed)
    }

    fn visit_unit<E>(self) -> Result<WellFormed, E> {
        Ok(WellFormed)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<WellFormed, A::Error> {
        while seq.next_element::<WellFormed>()?.is_some() {}
        Ok(WellFormed)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<WellFormed, A::Error> {
        if !self.request {
            while map.next_entry::<WellFormed, WellFormed>()?.is_some() {}
            return Ok(WellFormed);
        }
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "id" {
                map.next_value::<IdText>()?;
            } else {
                map.next_value::<WellFormed>()?;
            }
        }
        Ok(WellFormed)
    }
}

/// The reply line to a request, its id written exactly as the client sent it.
pub fn response_line(id: &RequestId, result: Result<Value, RpcError>) -> String {
    let (key, body) = match result {
        Ok(result) => ("result", result),
        Err(error) => ("error", error.to_value()),
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"{key}":{body}}}"#,
        id.as_json()
    )
}

/// A notification line from the server.
pub fn notification_line(method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string()
}

/// Named params with typed getters; each failure is a -32602 naming the field (with the
/// path of an enclosing object, e.g. `model.baseUrl`).
#[derive(Debug, Clone, Default)]
pub struct Params {
    map: Map<String, Value>,
    /// `messages` as sent, raw (see [`Params::take_messages`]).
    messages: Option<Box<RawValue>>,
    prefix: String,
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map
            && self.prefix == other.prefix
            && self.messages.as_ref().map(|m| m.get()) == other.messages.as_ref().map(|m| m.get())
    }
}

/// The name of the param that carries transcript messages, kept raw.
const MESSAGES: &str = "messages";

/// A `messages` param: its raw JSON text as a client sent it, or a value (params built in
/// code).
#[derive(Debug)]
pub enum MessagesParam {
    /// The JSON text.
    Raw(Box<RawValue>),
    /// A value.
    Value(Value),
}

impl Params {
    /// The params of a request.
    #[cfg(test)]
    pub fn new(map: Map<String, Value>) -> Self {
        Self {
            map,
            messages: None,
            prefix: String::new(),
        }
    }

    /// The params of a raw JSON object: every member parsed but `messages`, kept as its
    /// text. `None` when `raw` is not an object.
    fn from_raw(raw: &RawValue) -> Option<Self> {
        let members = serde_json::from_str::<HashMap<String, &RawValue>>(raw.get()).ok()?;
        let mut params = Self::default();
        for (name, value) in members {
            if name == MESSAGES {
                params.messages = (value.get() != "null").then(|| value.to_owned());
            } else {
                let value = serde_json::from_str(value.get()).ok()?;
                params.map.insert(name, value);
            }
        }
        Some(params)
    }

    /// The fields of a nested object, named `prefix.field` in errors.
    pub fn nested(map: Map<String, Value>, prefix: &str) -> Self {
        Self {
            map,
            messages: None,
            prefix: format!("{prefix}."),
        }
    }

    /// Takes the `messages` param out, raw when it came in a line (absent or null →
    /// `None`).
    pub fn take_messages(&mut self) -> Option<MessagesParam> {
        match self.messages.take() {
            Some(raw) => Some(MessagesParam::Raw(raw)),
            None => self.take(MESSAGES).map(MessagesParam::Value),
        }
    }

    /// The name of `field` as errors say it.
    pub fn path(&self, field: &str) -> String {
        format!("{}{field}", self.prefix)
    }

    /// A -32602 for `field`.
    pub fn invalid(&self, field: &str, problem: impl std::fmt::Display) -> RpcError {
        RpcError::invalid_params(&self.path(field), problem)
    }

    /// The raw value, `None` when absent or null.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    /// Takes the raw value out (absent or null → `None`). `messages` is better taken with
    /// [`Params::take_messages`], which builds no JSON tree of it.
    pub fn take(&mut self, field: &str) -> Option<Value> {
        if field == MESSAGES {
            if let Some(raw) = self.messages.take() {
                return serde_json::from_str(raw.get()).ok();
            }
        }
        self.map.remove(field).filter(|v| !v.is_null())
    }

    /// A required non-empty string.
    pub fn string(&self, field: &str) -> Result<String, RpcError> {
        match self.map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(self.invalid(field, "must not be empty")),
            None | Some(Value::Null) => Err(self.invalid(field, "is missing")),
            Some(other) => {
                Err(self.invalid(field, format!("must be a string, not {}", kind(other))))
            }
        }
    }

    /// An optional string (absent or null → `None`).
    pub fn opt_string(&self, field: &str) -> Result<Option<String>, RpcError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.invalid(
                field,
                format!("must be a string or null, not {}", kind(other)),
            )),
        }
    }

    /// An optional boolean (absent or null: `None`).
    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, RpcError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.boolean(field).map(Some),
        }
    }

    /// A required boolean.
    pub fn boolean(&self, field: &str) -> Result<bool, RpcError> {
        match self.map.get(field) {
            Some(Value::Bool(b)) => Ok(*b),
            None | Some(Value::Null) => Err(self.invalid(field, "is missing")),
            Some(other) => {
                Err(self.invalid(field, format!("must be a boolean, not {}", kind(other))))
            }
        }
    }
}

pub(crate) use crate::texts::json_kind as kind;

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(line: &str) -> (Value, i64) {
        match parse_line(line.as_bytes()) {
            Incoming::Invalid { id, error } => (id.to_value(), error.code),
            other => panic!("{line} parsed as {other:?}"),
        }
    }

    #[test]
    fn v4_each_bad_shape_gets_its_code() {
        assert_eq!(error_of("{not json"), (Value::Null, PARSE_ERROR));
        assert_eq!(error_of(""), (Value::Null, PARSE_ERROR));
        assert_eq!(error_of("[1,2]"), (Value::Null, INVALID_REQUEST));
        assert_eq!(error_of("42"), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#),
            (json!(7), INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":"a","method":3}"#),
            (json!("a"), INVALID_REQUEST)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            (json!(1), INVALID_PARAMS)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}"#),
            (json!(1), INVALID_REQUEST)
        );
    }

    #[test]
    fn v4_a_line_that_is_not_readable_json_anywhere_is_a_parse_error() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let request = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/command","params":{params}}}"#)
        };
        let mut bad_utf8 = request(r#"{"sessionId":"s","line":"aXb"}"#).into_bytes();
        let x = bad_utf8.iter().position(|b| *b == b'X').unwrap();
        bad_utf8[x] = 0xff;
        let lines: Vec<Vec<u8>> = vec![
            request(r#"{"sessionId":"s","line":"\ud800"}"#).into(),
            request(r#"{"sessionId":"s","n":1e999999}"#).into(),
            request(&format!(r#"{{"sessionId":"s","deep":{deep}}}"#)).into(),
            request(&format!(r#"{{"sessionId":"s","messages":[{deep}]}}"#)).into(),
            request(r#"{"sessionId":"s","messages":["\udc00"]}"#).into(),
            bad_utf8,
            br#""\ud800""#.to_vec(),
            b"1e999999".to_vec(),
            deep.clone().into(),
            br#"{"jsonrpc":"2.0","id":1,"method":"x\ud800"}"#.to_vec(),
        ];
        for line in lines {
            match parse_line(&line) {
                Incoming::Invalid { id, error } => {
                    assert_eq!(
                        (id.to_value(), error.code),
                        (Value::Null, PARSE_ERROR),
                        "{} → {error:?}",
                        String::from_utf8_lossy(&line)
                    );
                    assert!(error.message.starts_with("parse error: "), "{error:?}");
                }
                other => panic!("{} parsed as {other:?}", String::from_utf8_lossy(&line)),
            }
        }
        // Nesting up to the limit is still read.
        let fine = request(&format!(
            r#"{{"sessionId":"s","deep":{}1{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        ));
        assert!(matches!(
            parse_line(fine.as_bytes()),
            Incoming::Request { .. }
        ));
    }

    #[test]
    fn v1_requests_and_notifications_parse_with_u2028_inside_strings() {
        let line = "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"session/command\",\"params\":{\"line\":\"a\u{2028}b\"}}";
        match parse_line(line.as_bytes()) {
            Incoming::Request { id, method, params } => {
                assert_eq!(id.as_json(), r#""r1""#);
                assert_eq!(method, "session/command");
                assert_eq!(params.string("line").unwrap(), "a\u{2028}b");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","method":"session/userPrompt"}"#),
            Incoming::Notification { .. }
        ));
    }

    #[test]
    fn v4_ids_are_echoed_exactly_as_sent_even_past_64_bits() {
        let cases = [
            "123456789012345678901234567890",
            "-98765432109876543210987654321",
            "1.50",
            "18446744073709551616",
            "1e400",
            "-1E99999",
            "-0",
            "7",
            r#""a\u00e9\"b""#,
            "null",
        ];
        for id in cases {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize"}}"#);
            let Incoming::Request { id: got, .. } = parse_line(line.as_bytes()) else {
                panic!("{line} is a request");
            };
            let reply = response_line(&got, Ok(json!({})));
            assert_eq!(
                reply,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            );
            // The same for an error reply to a bad request.
            let bad = format!(r#"{{"jsonrpc":"1.0","id":{id},"method":"x"}}"#);
            let Incoming::Invalid { id: got, .. } = parse_line(bad.as_bytes()) else {
                panic!("{bad} is invalid");
            };
            assert_eq!(got.as_json(), id);
        }
    }

    #[test]
    fn v4_param_errors_name_the_field() {
        let p = Params::new(
            json!({"a": 1, "b": "", "c": true})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let nested = Params::nested(Map::new(), "model");
        assert_eq!(
            nested.string("id").unwrap_err().data,
            Some(json!({"field": "model.id"}))
        );
        let e = p.string("a").unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"field": "a"})));
        assert!(e.message.contains("`a` must be a string"), "{}", e.message);
        assert!(p.string("b").unwrap_err().message.contains("empty"));
        assert!(p.string("z").unwrap_err().message.contains("missing"));
        assert!(p.boolean("c").unwrap());
        assert!(p.boolean("a").is_err());
    }

    #[test]
    fn v2_replies_and_base_mismatch_look_as_specified() {
        let ok = response_line(&RequestId("3".into()), Ok(json!({})));
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        let err = response_line(
            &RequestId(r#""x""#.into()),
            Err(RpcError::base_mismatch(Some("ab"), None)),
        );
        let v: Value = serde_json::from_str(&err).unwrap();
        assert_eq!(v["error"]["code"], BASE_MISMATCH);
        assert_eq!(v["error"]["data"], json!({"expected": "ab"}));
        let n = notification_line("session/steerReady", json!({"sessionId": "s"}));
        assert_eq!(
            n,
            r#"{"jsonrpc":"2.0","method":"session/steerReady","params":{"sessionId":"s"}}"#
        );
    }
}

//! JSON-RPC 2.0 framing of `advisor serve` (V1, V4): what a line is, error objects with the
//! codes of V4, and typed access to named params that names the field on error.

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

/// A request id: a string or a number as the client sent it (echoed verbatim).
pub type RequestId = Value;

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
pub fn parse_line(line: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Invalid {
                id: Value::Null,
                error: RpcError::parse_error(e),
            }
        }
    };
    let Value::Object(mut obj) = value else {
        return Incoming::Invalid {
            id: Value::Null,
            error: RpcError::invalid_request("expected one JSON object per line"),
        };
    };
    let id = match obj.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some(id),
        Some(_) => {
            return Incoming::Invalid {
                id: Value::Null,
                error: RpcError::invalid_request("`id` must be a string, a number or null"),
            }
        }
    };
    let invalid = |error| Incoming::Invalid {
        id: id.clone().unwrap_or(Value::Null),
        error,
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(RpcError::invalid_request("`jsonrpc` must be \"2.0\""));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return invalid(RpcError::invalid_request("`method` must be a string")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Params::default(),
        Some(Value::Object(map)) => Params::new(map),
        Some(Value::Array(_)) => {
            return invalid(RpcError::invalid_params(
                "params",
                "must be an object of named params",
            ))
        }
        Some(_) => return invalid(RpcError::invalid_request("`params` must be an object")),
    };
    match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    }
}

/// The reply line to a request.
pub fn response_line(id: &RequestId, result: Result<Value, RpcError>) -> String {
    let v = match result {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_value() }),
    };
    v.to_string()
}

/// A notification line from the server.
pub fn notification_line(method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string()
}

/// Named params with typed getters; each failure is a -32602 naming the field (with the
/// path of an enclosing object, e.g. `model.baseUrl`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    map: Map<String, Value>,
    prefix: String,
}

impl Params {
    /// The params of a request.
    pub fn new(map: Map<String, Value>) -> Self {
        Self {
            map,
            prefix: String::new(),
        }
    }

    /// The fields of a nested object, named `prefix.field` in errors.
    pub fn nested(map: Map<String, Value>, prefix: &str) -> Self {
        Self {
            map,
            prefix: format!("{prefix}."),
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

    /// Takes the raw value out (absent or null → `None`).
    pub fn take(&mut self, field: &str) -> Option<Value> {
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

/// The JSON kind of a value, for error messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(line: &str) -> (Value, i64) {
        match parse_line(line.as_bytes()) {
            Incoming::Invalid { id, error } => (id, error.code),
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
    fn v1_requests_and_notifications_parse_with_u2028_inside_strings() {
        let line = "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"session/command\",\"params\":{\"line\":\"a\u{2028}b\"}}";
        match parse_line(line.as_bytes()) {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, json!("r1"));
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
        let ok = response_line(&json!(3), Ok(json!({})));
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        let err = response_line(&json!("x"), Err(RpcError::base_mismatch(Some("ab"), None)));
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

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use super::*;
use rmcp::model::{
    ClientRequest, GetMeta, NumberOrString, PingRequest, ProgressToken, ServerNotification,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Decodes `line` as the answer to a pending `tools/call` (so through the direct path first,
/// which must fall back to the general one for everything it does not take).
fn dec(line: &[u8]) -> Decoded {
    decode(line, Expecting::ANY, |_| Awaited::Call)
}

fn reason_of(d: Decoded) -> (Option<RequestId>, String) {
    match d {
        Decoded::BadResponse { id, reason } => (Some(id), reason),
        other => panic!("expected a refused response, got {other:?}"),
    }
}

#[test]
fn a_lone_surrogate_fails_the_response_it_answers_with_the_reason() {
    let (id, reason) = reason_of(dec(
        br#"{"jsonrpc":"2.0","id":3,"result":{"name":"\ud800"}}"#,
    ));
    assert_eq!(id, Some(RequestId::Number(3)));
    assert!(
        reason.contains("does not decode") && reason.contains("escape"),
        "{reason}"
    );
}

#[test]
fn wrong_envelopes_are_named() {
    let (_, r) = reason_of(dec(br#"{"jsonrpc":"1.0","id":1,"result":{}}"#));
    assert!(r.contains("not \"2.0\""), "{r}");
    let (_, r) = reason_of(dec(
        br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
    ));
    assert!(r.contains("both `result` and `error`"), "{r}");
    let (_, r) = reason_of(dec(br#"{"jsonrpc":"2.0","id":1}"#));
    assert!(r.contains("neither"), "{r}");
}

#[test]
fn deep_nesting_is_refused_with_the_limit_and_the_id_is_still_found() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":"x","result":{}{}}}"#,
        "[".repeat(500),
        "]".repeat(500)
    );
    let (id, r) = reason_of(dec(deep.as_bytes()));
    assert_eq!(id, Some(RequestId::String("x".into())));
    assert!(r.contains("nested deeper than 127"), "{r}");
    assert_eq!(nesting_depth(br#"{"a":"[[[[","b":[{}]}"#), 3);
}

#[test]
fn requests_with_invalid_ids_are_answered_with_a_null_id_and_noise_is_ignored() {
    for id in ["null", "1.5", "{\"a\":1}", "true"] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        assert!(
            matches!(dec(line.as_bytes()), Decoded::BadRequest { id: None, .. }),
            "{id}"
        );
    }
    assert!(matches!(dec(b"starting up..."), Decoded::Ignored(_)));
    assert!(matches!(
        dec(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        Decoded::Message(_)
    ));
}

type Duplex = tokio::io::DuplexStream;

/// A wire whose server side the test plays: returns the wire and the server's ends.
/// The direct path for a `tools/call` answer gives exactly the message the general path
/// gives, and leaves to it what it must: a task, an input round, a non-response.
#[test]
fn a_call_result_decodes_the_same_by_the_direct_path() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"a\n\u00e9","type":"text"},{"type":"text","text":""}],"isError":false}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"isError":null,"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a","annotations":{"priority":0.5}}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a","_meta":{"k":1}}],"isError":true}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a","text":"b"}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text"}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":1}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}],"resultType":"complete"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}],"task":{}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\ud800"}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\ud83d\ude00"}]}}"#,
        r#"{"jsonrpc":"2.0","x":{},"id":7,"result":{"content":[{"type":"text","text":"a"}]}}"#,
        r#"{"jsonrpc":"1.0","id":7,"result":{"content":[{"type":"text","text":"a"}]}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{"content":[{"type":"text","text":"a"}]}}"#,
        r#"{"jsonrpc":"2.0","id":"a","result":{"content":[],"isError":true,"_meta":{"k":[1,2.5]}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"structuredContent":null,"resultType":"complete"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"a":{"b":[null,true]}},"extra":1}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"t","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    ];
    // What serde_json lets through in a value it skips but refuses in one it reads: each in
    // a member `CallToolResult` (or the envelope) does not read.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[],"x":{}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let surrogate = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"x":"\ud800"}}"#;
    let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"x":""#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\"}");
    let mut bad_text =
        br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""#.to_vec();
    bad_text.extend_from_slice(b"\xff\"}]}}");
    let mut all: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    all.extend([
        deep.into_bytes(),
        surrogate.as_bytes().to_vec(),
        bad_utf8,
        bad_text,
    ]);
    let mut direct = 0;
    for line in &all {
        let shown = String::from_utf8_lossy(line);
        let general = decode(line, Expecting::ANY, |_| Awaited::Other);
        let fast = decode(line, Expecting::ANY, |_| Awaited::Call);
        // Debug shows every field of the message (rmcp's request types have no `==`).
        assert_eq!(format!("{general:?}"), format!("{fast:?}"), "{shown}");
        // With no call or listing awaited, a line goes the general way untried.
        let unexpected = decode(line, Expecting::default(), |_| Awaited::Call);
        assert_eq!(format!("{general:?}"), format!("{unexpected:?}"), "{shown}");
        direct += usize::from(decode_awaited(line, Expecting::ANY, |_| Awaited::Call).is_some());
    }
    // Twelve take the direct path (four of them in the plain-text pass); a block with its
    // text twice, or none, or not a string, the two tasks, a lone surrogate, a wrong
    // version or id, the input round, `{}` and the four that only reading would refuse do
    // not.
    assert_eq!(direct, 12);
}

/// What the lenient decoder makes of a decoded listing page, as `paginate` hands it over.
fn listed(d: &Decoded) -> Result<crate::lenient::Page<mcp_host_core::ToolDescriptor>, String> {
    match d {
        Decoded::Message(m) => match &**m {
            JsonRpcMessage::Response(r) => {
                let value = match &r.result {
                    ServerResult::CustomResult(page) => page.0.clone(),
                    other => serde_json::to_value(other).map_err(|e| e.to_string())?,
                };
                crate::lenient::parse_tool_page(value)
            }
            other => Err(format!("not a response: {other:?}")),
        },
        other => Err(format!("{other:?}")),
    }
}

#[test]
fn a_listing_page_lists_the_same_tools_by_the_direct_path() {
    let tool = r#"{"name":"a","description":"d","inputSchema":{"type":"object"}}"#;
    let lines: Vec<String> = vec![
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{tool}]}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{tool}],"nextCursor":"c"}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{tool}],"resultType":"complete"}}}}"#),
        // Annotations with a member the protocol does not know, and a null.
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b","inputSchema":{},"annotations":{"readOnlyHint":true,"x":1,"title":null}}]}}"#.into(),
        // Annotations the protocol's type refuses: kept as written either way.
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b","inputSchema":{},"annotations":{"readOnlyHint":"yes"}}]}}"#.into(),
        // One broken tool beside a good one.
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{tool},{{"name":"c"}}]}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{tool},{{"name":"c","inputSchema":{{"type":"string"}}}}]}}}}"#),
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]},"x":1}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[],"resultType":"input_required"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":{"prompts":[]}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":[]}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"\ud800","inputSchema":{}}]}}"#.into(),
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#.into(),
        r#"{"jsonrpc":"1.0","id":3,"result":{"tools":[]}}"#.into(),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{{"name":"d","inputSchema":{{"x":{}{}}}}}]}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        ),
    ];
    let mut bad_utf8 =
        br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"e","inputSchema":{},"description":""#
            .to_vec();
    bad_utf8.extend_from_slice(b"\xff\"}]}}");
    let mut all: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    all.push(bad_utf8);
    let mut direct = 0;
    for line in &all {
        let shown = String::from_utf8_lossy(line);
        let general = decode(line, Expecting::ANY, |_| Awaited::Other);
        let fast = decode(line, Expecting::ANY, |_| Awaited::Listing);
        assert_eq!(listed(&general), listed(&fast), "{shown}");
        if !matches!(general, Decoded::Message(_)) {
            // Refused by the decoder either way, and for the same reason.
            assert_eq!(format!("{general:?}"), format!("{fast:?}"), "{shown}");
        }
        direct += usize::from(decode_awaited(line, Expecting::ANY, |_| Awaited::Listing).is_some());
    }
    // The seven clean pages, and two objects with no tools in them; not: a result that is
    // not an object, an extra member, an input round, an error, a wrong version, and the
    // three no reading takes.
    assert_eq!(direct, 9);
}

fn pair(cap: usize) -> (Wire<Duplex, Duplex>, Duplex, BufReader<Duplex>) {
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    (
        Wire::new(client_in, client_out, cap),
        server_out,
        BufReader::new(server_in),
    )
}

async fn send_ping<R>(wire: &mut Wire<R, Duplex>, id: i64)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let msg = JsonRpcMessage::request(
        ClientRequest::PingRequest(PingRequest::default()),
        RequestId::Number(id),
    );
    wire.send(msg).await.unwrap();
}

#[tokio::test]
async fn only_an_exactly_matching_pending_id_is_answered() {
    let (mut wire, mut server, _from_client) = pair(1024);
    send_ping(&mut wire, 1).await;
    // A string "1" for request 1, an answer to a request never sent, then the real one.
    server
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
        )
        .await
        .unwrap();
    drop(server);
    let got = wire.receive().await.unwrap();
    assert!(
        matches!(&got, JsonRpcMessage::Response(r) if r.id == RequestId::Number(1)),
        "{got:?}"
    );
    // The duplicate answer is to no pending request any more.
    assert!(wire.receive().await.is_none());
}

#[tokio::test]
async fn a_refused_answer_fails_its_request_and_says_why() {
    let (mut wire, mut server, _from_client) = pair(1024);
    send_ping(&mut wire, 7).await;
    server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"\\udc00\"}}\n")
        .await
        .unwrap();
    let got = wire.receive().await.unwrap();
    let JsonRpcMessage::Error(e) = got else {
        panic!("{got:?}")
    };
    assert_eq!(e.id, Some(RequestId::Number(7)));
    let why = wire.verdicts().rejection(&RequestId::Number(7)).unwrap();
    assert!(why.contains("escape"), "{why}");
}

#[tokio::test]
async fn an_invalid_request_id_is_answered_with_id_null() {
    let (mut wire, mut server, mut from_client) = pair(1024);
    server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}\n")
        .await
        .unwrap();
    drop(server);
    assert!(wire.receive().await.is_none());
    let mut line = String::new();
    from_client.read_line(&mut line).await.unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32600);
}

#[tokio::test]
async fn an_endless_line_stops_at_the_cap_and_fails_every_pending_request() {
    // The server's stdout is an endless line: reading must stop at the cap, not buffer on.
    let (client_out, _server_in) = tokio::io::duplex(1 << 16);
    let mut wire = Wire::new(tokio::io::repeat(b'x'), client_out, 64 * 1024);
    send_ping(&mut wire, 1).await;
    send_ping(&mut wire, 2).await;
    let mut failed = Vec::new();
    while let Some(msg) = wire.receive().await {
        let JsonRpcMessage::Error(e) = msg else {
            panic!("{msg:?}")
        };
        failed.push(e.id.unwrap());
    }
    failed.sort_by_key(|id| id.to_string());
    assert_eq!(failed, [RequestId::Number(1), RequestId::Number(2)]);
    let fault = wire.verdicts().fault().unwrap();
    assert!(fault.contains("longer than 65536 bytes"), "{fault}");
}

#[test]
fn serde_json_refuses_exactly_what_is_deeper_than_the_limit() {
    let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(serde_json::from_str::<Value>(&nest(MAX_MESSAGE_DEPTH)).is_ok());
    assert!(serde_json::from_str::<Value>(&nest(MAX_MESSAGE_DEPTH + 1)).is_err());
}

/// Sends a ping carrying rmcp's progress token `token` and returns the token the server
/// saw on the wire.
async fn send_ping_with_progress(
    wire: &mut Wire<Duplex, Duplex>,
    from_client: &mut BufReader<Duplex>,
    id: i64,
    token: u32,
) -> Value {
    let mut ping = ClientRequest::PingRequest(PingRequest::default());
    ping.get_meta_mut()
        .set_progress_token(ProgressToken(NumberOrString::Number(token.into())));
    let msg = JsonRpcMessage::request(ping, RequestId::Number(id));
    wire.send(msg).await.unwrap();
    let mut line = String::new();
    from_client.read_line(&mut line).await.unwrap();
    let sent: Value = serde_json::from_str(&line).unwrap();
    sent["params"]["_meta"]["progressToken"].clone()
}

/// The token of a progress notification `msg` must be.
fn progress_token_of(msg: RxJsonRpcMessage<RoleClient>) -> ProgressToken {
    match msg {
        JsonRpcMessage::Notification(n) => match n.notification {
            ServerNotification::ProgressNotification(p) => p.params.progress_token,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

fn progress_line(token: &Value) -> String {
    let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1}});
    format!("{note}\n")
}

/// Found by the simulation: rmcp numbers progress tokens from 1 on every connection, so
/// a server still reporting progress for a request of an earlier connection kept a hung
/// request of the next one alive (its idle deadline restarts on progress) up to the
/// ceiling of ten deadlines.
#[tokio::test]
async fn progress_reaches_only_the_request_still_waiting_for_it() {
    let (mut first, _server, mut first_sent) = pair(1024);
    let earlier = send_ping_with_progress(&mut first, &mut first_sent, 1, 1).await;
    let (mut wire, mut server, mut from_client) = pair(1024);
    let token = send_ping_with_progress(&mut wire, &mut from_client, 1, 1).await;
    assert_ne!(earlier, token, "each connection's tokens are its own");
    let unknown = serde_json::json!(1);
    for line in [
        progress_line(&earlier),
        progress_line(&unknown),
        progress_line(&token),
    ] {
        server.write_all(line.as_bytes()).await.unwrap();
    }
    server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
        .await
        .unwrap();
    // After the answer, progress for the same request is for no waiting request.
    server
        .write_all(progress_line(&token).as_bytes())
        .await
        .unwrap();
    drop(server);
    assert_eq!(
        progress_token_of(wire.receive().await.unwrap()),
        ProgressToken(NumberOrString::Number(1)),
        "delivered with rmcp's own token"
    );
    let answer = wire.receive().await.unwrap();
    assert!(matches!(answer, JsonRpcMessage::Response(_)), "{answer:?}");
    assert!(wire.receive().await.is_none(), "late progress is dropped");
}

fn call_request(name: &str) -> rmcp::model::CallToolRequest {
    let params = rmcp::model::CallToolRequestParams::new(name.to_string());
    rmcp::model::CallToolRequest::new(params)
}

/// A `tools/call` sent past rmcp: its answer, a refused answer and a server error go to
/// its caller and never to rmcp's loop, whatever order they come in; its ids are the
/// wire's own (apart from rmcp's, which number from 0); progress for it comes out with its
/// own token; a forged answer to an id not pending is dropped.
#[tokio::test]
async fn calls_sent_past_rmcp_are_answered_to_their_caller_only() {
    let (mut wire, mut server, mut from_client) = pair(1 << 16);
    let mut sent = Vec::new();
    let mut answers = Vec::new();
    for name in ["a", "b", "c"] {
        let (id, token, answer) = wire.send_direct(call_request(name)).await.unwrap();
        let mut line = String::new();
        from_client.read_line(&mut line).await.unwrap();
        let on_wire: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(on_wire["params"]["name"], name);
        assert_eq!(serde_json::to_value(&id).unwrap(), on_wire["id"]);
        sent.push((id, token, on_wire));
        answers.push(answer);
    }
    let ids: Vec<i64> = sent
        .iter()
        .map(|(_, _, w)| w["id"].as_i64().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]) && ids[0] >= DIRECT_IDS,
        "{ids:?}"
    );
    let wire_token = sent[0].2["params"]["_meta"]["progressToken"].clone();
    let lines = [
        progress_line(&wire_token),
        // Forged: an id never sent.
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#,
            ids[2] + 1
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32000,"message":"no"}}}}"#,
            ids[1]
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"name":"\ud800"}}}}"#,
            ids[2]
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":"hi"}}]}}}}"#,
            ids[0]
        ),
    ];
    for line in lines {
        server
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    drop(server);
    // rmcp sees the progress (with the caller's token) and nothing else.
    assert_eq!(progress_token_of(wire.receive().await.unwrap()), sent[0].1);
    assert!(wire.receive().await.is_none(), "no answer went to rmcp");
    let mut answers = answers.into_iter();
    let first = answers.next().unwrap().await.unwrap();
    assert!(
        matches!(&first, DirectAnswer::Result(ServerResult::CallToolResult(r)) if r.content.len() == 1),
        "{first:?}"
    );
    let second = answers.next().unwrap().await.unwrap();
    assert!(
        matches!(&second, DirectAnswer::Error(e) if e.message == "no"),
        "{second:?}"
    );
    let third = answers.next().unwrap().await.unwrap();
    assert!(
        matches!(&third, DirectAnswer::Refused(r) if r.contains("does not decode")),
        "{third:?}"
    );
}

/// A stream that goes out of step (an over-long line) fails every call sent past rmcp at
/// once, with the reason, as it fails rmcp's own requests.
#[tokio::test]
async fn an_overlong_line_fails_calls_sent_past_rmcp_with_the_reason() {
    let (mut wire, mut server, _from_client) = pair(64);
    let (_, _, answer) = wire.send_direct(call_request("a")).await.unwrap();
    server.write_all(&[b'x'; 100]).await.unwrap();
    assert!(wire.receive().await.is_none());
    let got = answer.await.unwrap();
    assert!(
        matches!(&got, DirectAnswer::Refused(r) if r.contains("longer than 64 bytes")),
        "{got:?}"
    );
}

/// The line a call sent past rmcp is written as says what rmcp would have written for the
/// same request (its `_meta` merged from both places it can be kept), but for the id and
/// progress token, which are the wire's own.
#[tokio::test]
async fn a_call_sent_past_rmcp_is_written_as_rmcp_writes_it() {
    let (wire, _server, mut from_client) = pair(1 << 16);
    let mut params = rmcp::model::CallToolRequestParams::new("write_file");
    params.arguments = serde_json::json!({"path": "/tmp/ü", "n": [1, 2.5, null]})
        .as_object()
        .cloned();
    params.request_state = Some("opaque".into());
    let mut base = rmcp::model::RequestMetaObject::default();
    base.0.insert("kept".into(), "from the params".into());
    base.0.insert("both".into(), "params".into());
    params.meta = Some(base);
    let mut request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    let meta = request.get_meta_mut();
    meta.0.insert("both".into(), "request".into());
    meta.0.insert(
        "traceparent".into(),
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
    );
    let ClientRequest::CallToolRequest(call) = request.clone() else {
        unreachable!()
    };
    wire.send_direct(call).await.unwrap();
    let mut line = String::new();
    from_client.read_line(&mut line).await.unwrap();
    let direct: Value = serde_json::from_str(&line).unwrap();

    let id: RequestId = serde_json::from_value(direct["id"].clone()).unwrap();
    let token: ProgressToken =
        serde_json::from_value(direct["params"]["_meta"]["progressToken"].clone()).unwrap();
    request.get_meta_mut().set_progress_token(token);
    let by_rmcp: TxJsonRpcMessage<RoleClient> = JsonRpcMessage::request(request, id);
    assert_eq!(direct, serde_json::to_value(&by_rmcp).unwrap());
    assert_eq!(direct["params"]["_meta"]["both"], "request");
    assert_eq!(direct["params"]["_meta"]["kept"], "from the params");
}

/// A line is tried as a call's or a listing's answer only while one is awaited: which kinds
/// are follows what was sent and what was settled.
#[test]
fn the_kinds_awaited_follow_the_requests_outstanding() {
    let shared = Shared::default();
    let mut meta = rmcp::model::RequestMetaObject::default();
    let id = |n| RequestId::Number(n);
    assert_eq!(shared.expecting(), Expecting::default());
    shared.register(id(1), &mut meta, Awaited::Other, None);
    assert_eq!(shared.expecting(), Expecting::default());
    shared.register(id(2), &mut meta, Awaited::Listing, None);
    let listings = Expecting {
        calls: false,
        listings: true,
    };
    assert_eq!(shared.expecting(), listings);
    shared.register(id(3), &mut meta, Awaited::Call, None);
    assert_eq!(shared.expecting(), Expecting::ANY);
    shared.take_outstanding(&id(2));
    let calls = Expecting {
        calls: true,
        listings: false,
    };
    assert_eq!(shared.expecting(), calls);
    shared.take_outstanding(&id(3));
    assert_eq!(shared.expecting(), Expecting::default());
}

/// The hand-written token is the one `format!` wrote, for every kind of requester's token.
#[test]
fn wire_tokens_read_as_salt_dash_token() {
    let salts = [0, 1, 0xdead_beef, u64::MAX];
    let owns = [
        NumberOrString::Number(0),
        NumberOrString::Number(7),
        NumberOrString::Number(-42),
        NumberOrString::Number(i64::MAX),
        NumberOrString::Number(i64::MIN),
        NumberOrString::Number(1_073_741_824),
        NumberOrString::String("".into()),
        NumberOrString::String("tok-é".into()),
    ];
    for salt in salts {
        for own in &owns {
            assert_eq!(super::wire_token(salt, own), format!("{salt:016x}-{own}"));
        }
    }
}

/// A wire whose stdin the server never reads: a pipe of `room` bytes, held but not read.
fn deaf_pair(room: usize) -> (Wire<Duplex, Duplex>, Duplex, Duplex) {
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    let (client_out, server_in) = tokio::io::duplex(room);
    (
        Wire::new(client_in, client_out, 1 << 16),
        server_out,
        server_in,
    )
}

fn call_with_text(bytes: usize) -> rmcp::model::CallToolRequest {
    let mut params = rmcp::model::CallToolRequestParams::new("echo");
    params.arguments = serde_json::json!({"text": "x".repeat(bytes)})
        .as_object()
        .cloned();
    rmcp::model::CallToolRequest::new(params)
}

/// A call whose line the server stops reading half-way can be given up on (a caller's
/// deadline drops the write); the stream is then out of step, so stdin is closed and the
/// fault named, and no later line can be taken as the rest of it. The request is not left
/// awaited. A write given up on before any byte left puts nothing out of step.
#[tokio::test]
async fn a_line_given_up_half_written_closes_stdin_and_names_the_fault() {
    let (wire, _server, _server_in) = deaf_pair(1024);
    let send = wire.send_direct(call_with_text(8 * 1024));
    let given_up = tokio::time::timeout(std::time::Duration::from_millis(50), send).await;
    assert!(given_up.is_err(), "the pipe has room for 1 KiB only");
    let fault = wire.verdicts().fault().expect("out of step");
    assert!(fault.contains("stopped reading its input"), "{fault}");
    assert!(wire.shared.with(|c| c.outstanding.is_empty()).unwrap());
    let again = wire.send_direct(call_request("a")).await.unwrap_err();
    assert_eq!(again.kind(), std::io::ErrorKind::NotConnected);

    // Nothing written (another write holds stdin): given up on, nothing is out of step.
    let (wire, _server, _server_in) = deaf_pair(1024);
    let held = wire.writer.lock().await;
    let send = wire.send_direct(call_request("b"));
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(20), send)
            .await
            .is_err()
    );
    drop(held);
    assert!(wire.verdicts().fault().is_none());
    assert!(wire.shared.with(|c| c.outstanding.is_empty()).unwrap());
    wire.send_direct(call_request("c")).await.unwrap();
}

/// A server that stops reading its input while it keeps sending requests this side must
/// answer (here: requests with ids it cannot serve, each refused with a reply) gathers at
/// most [`MAX_WRITES_WAITING`] writes; past that a send fails at once instead of waiting
/// without end, rmcp's own sends included.
#[tokio::test]
async fn writes_waiting_for_a_deaf_server_are_bounded() {
    let (mut wire, mut server, _server_in) = deaf_pair(256);
    let bad = b"{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}\n";
    let storm: Vec<u8> = bad.repeat(2_000);
    server.write_all(&storm).await.unwrap();
    drop(server);
    assert!(wire.receive().await.is_none());
    // Every refusal's task has run as far as it can: written, waiting, or turned away.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while wire.shared.writes.load(Ordering::Relaxed) < MAX_WRITES_WAITING {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pipe never filled"
        );
        tokio::task::yield_now().await;
    }
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        wire.shared.writes.load(Ordering::Relaxed),
        MAX_WRITES_WAITING
    );
    let msg = JsonRpcMessage::request(
        ClientRequest::PingRequest(PingRequest::default()),
        RequestId::Number(1),
    );
    let refused = wire.send(msg).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
    assert!(
        refused.to_string().contains("not reading its input"),
        "{refused}"
    );
}

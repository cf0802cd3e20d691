//! The control channel refuses what a hostile page or a rebinding DNS name could send: a
//! foreign `Origin`, a `Host` that is not the service's, a cookie without its CSRF token.
//! Each refusal changes nothing.

use super::*;
use crate::common::Sandbox;
use serde_json::{Value, json};

/// Signs in through the single-user link; the cookie and CSRF token.
fn sign_in(service: &Service) -> (String, String) {
    let link = service.signin.clone().unwrap();
    let path = link.split_once(&service.addr).unwrap().1;
    let r = request(&service.addr, "GET", path, &[], None);
    assert_eq!(r.status, 303, "{r:?}");
    let cookie_header = r.header("set-cookie").unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
        assert!(cookie_header.contains(attr), "{cookie_header}");
    }
    let cookie = cookie_header.split(';').next().unwrap().to_string();
    let who = me(&service.addr, &cookie);
    (cookie, who["csrf"].as_str().unwrap().to_string())
}

#[test]
fn foreign_origins_hosts_and_missing_csrf_tokens_change_nothing() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({"f": fake_entry(&[], false)}));
    let mut setup = Setup::new(&sb, &cat, &model);
    setup.extra = vec!["--single-user".into()];
    let service = setup.start();
    let addr = service.addr.clone();
    let (cookie, csrf) = sign_in(&service);
    let own = format!("http://{addr}");
    let create = |headers: &[(&str, &str)]| {
        request(
            &addr,
            "POST",
            "/api/conversations",
            headers,
            Some(&json!({"title": "x"})),
        )
        .status
    };
    let count = || {
        let r = request(
            &addr,
            "GET",
            "/api/conversations",
            &[("Cookie", &cookie)],
            None,
        );
        r.json().as_array().unwrap().len()
    };

    // No CSRF token, a wrong one, a foreign Origin, a rebinding Host: all refused.
    assert_eq!(create(&[("Cookie", &cookie)]), 403);
    assert_eq!(
        create(&[("Cookie", &cookie), ("X-CSRF-Token", "forged")]),
        403
    );
    assert_eq!(
        create(&[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", "http://evil.example")
        ]),
        403
    );
    assert_eq!(
        create(&[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", "null")
        ]),
        403
    );
    let rebound = format!("evil.example:{}", addr.rsplit(':').next().unwrap());
    assert_eq!(
        create(&[
            ("Host", &rebound),
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf)
        ]),
        421
    );
    // The sign-in link itself is not usable from a rebinding name either.
    let link_path = service
        .signin
        .as_ref()
        .unwrap()
        .split_once(&addr)
        .unwrap()
        .1
        .to_string();
    assert_eq!(
        request(&addr, "GET", &link_path, &[("Host", &rebound)], None).status,
        421
    );
    assert_eq!(
        request(&addr, "GET", "/signin?token=guess", &[], None).status,
        403
    );
    // A read from a foreign origin is refused too (not only writes).
    let read = request(
        &addr,
        "GET",
        "/api/conversations",
        &[("Cookie", &cookie), ("Origin", "http://evil.example")],
        None,
    );
    assert_eq!(read.status, 403);
    assert_eq!(count(), 0, "no refused request made a conversation");

    // The same request from the page itself passes.
    assert_eq!(
        create(&[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", &own)
        ]),
        201
    );
    assert_eq!(count(), 1);
    // Signed out, the cookie is worth nothing.
    let out = request(
        &addr,
        "POST",
        "/api/signout",
        &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
        None,
    );
    assert_eq!(out.status, 204);
    assert_eq!(
        request(&addr, "GET", "/api/me", &[("Cookie", &cookie)], None).status,
        401
    );
}

#[test]
fn bodies_over_the_cap_and_requests_over_the_budget_are_refused() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({}));
    let mut setup = Setup::new(&sb, &cat, &model);
    let token = setup.add_user("u", false);
    setup.extra = vec![
        "--max-body".into(),
        "4096".into(),
        "--rate".into(),
        "1".into(),
    ];
    let service = setup.start();
    let api = Api::new(&service, &token);
    let big = json!({"title": "x".repeat(10_000)});
    assert_eq!(api.send("POST", "/api/conversations", big).status, 413);
    // A burst of five, then the budget is spent.
    let statuses: Vec<u16> = (0..8).map(|_| api.get("/api/me").status).collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(statuses[0], 200);
}

#[test]
fn single_user_mode_refuses_a_non_loopback_address() {
    let sb = Sandbox::new();
    let cat = catalogue(&sb, json!({}));
    let out = sb
        .command(sb.path())
        .args([
            "serve",
            "--single-user",
            "--listen",
            "0.0.0.0:0",
            "--catalogue",
        ])
        .arg(&cat)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("loopback"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn per_user_caps_hold_when_requests_race() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let names = ["a", "b", "c", "d", "e", "f"];
    let servers: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| (n.to_string(), fake_entry(&[], false)))
        .collect();
    let cat = catalogue(&sb, Value::Object(servers));
    let mut setup = Setup::new(&sb, &cat, &model);
    let token = setup.add_user("u", false);
    for n in names {
        setup.grant(n, "*");
    }
    setup.extra = vec!["--max-servers-per-user".into(), "2".into()];
    let service = setup.start();
    let api = Api::new(&service, &token);
    // Six enables at once against a cap of two: two succeed, whatever the interleaving.
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let all: Vec<_> = names
            .iter()
            .map(|n| {
                let api = api.clone();
                s.spawn(move || {
                    api.send(
                        "PUT",
                        &format!("/api/servers/{n}"),
                        json!({"enabled": true}),
                    )
                    .status
                })
            })
            .collect();
        all.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 204).count(),
        2,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        4,
        "{statuses:?}"
    );
    let listed = api.get("/api/servers").json();
    let on = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["enabled"] == true)
        .count();
    assert_eq!(on, 2);
    // Streams: sixteen at once per user, the next one refused until one closes.
    let conv = api.conversation();
    let mut open: Vec<Events> = (0..16).map(|_| api.events(&conv, None)).collect();
    let path = format!("/api/conversations/{conv}/events");
    let auth = format!("Bearer {token}");
    assert_eq!(
        request(
            &service.addr,
            "GET",
            &path,
            &[("Authorization", &auth)],
            None
        )
        .status,
        429
    );
    drop(open.pop());
    wait_for("a closed stream to free its place", || {
        // A refused attempt answers at once; an accepted one is a stream, kept open here.
        let mut s = std::net::TcpStream::connect(&service.addr).unwrap();
        use std::io::{Read as _, Write as _};
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\n\r\n",
            service.addr
        );
        s.write_all(req.as_bytes()).unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        let accepted = head.ends_with(b"200");
        if accepted {
            open.push(Events::from_accepted(s));
        }
        accepted
    });
}

/// A plain request for `/healthz` on a raw connection.
fn healthz_request(addr: &str) -> String {
    format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

#[test]
fn a_header_sent_too_slowly_loses_its_connection_and_others_are_served() {
    use std::io::{Read as _, Write as _};
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({}));
    let mut setup = Setup::new(&sb, &cat, &model);
    setup.extra = vec!["--header-timeout-ms".into(), "300".into()];
    let service = setup.start();
    // Slowloris: a header begun and never finished.
    let mut slow = std::net::TcpStream::connect(&service.addr).unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: ").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut rest = Vec::new();
    // The server closes it (whatever it says first); a read that timed out would be Err.
    slow.read_to_end(&mut rest)
        .expect("the server closed the connection");
    assert!(
        !String::from_utf8_lossy(&rest).contains("200 OK"),
        "{rest:?}"
    );
    // A client that sends its header promptly is served as ever.
    let mut prompt = std::net::TcpStream::connect(&service.addr).unwrap();
    prompt
        .write_all(healthz_request(&service.addr).as_bytes())
        .unwrap();
    let mut answer = String::new();
    prompt.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn connections_past_the_cap_wait_until_one_closes() {
    use std::io::{Read as _, Write as _};
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({}));
    let mut setup = Setup::new(&sb, &cat, &model);
    setup.extra = vec!["--max-connections".into(), "2".into()];
    let service = setup.start();
    let idle: Vec<_> = (0..2)
        .map(|_| std::net::TcpStream::connect(&service.addr).unwrap())
        .collect();
    let mut third = std::net::TcpStream::connect(&service.addr).unwrap();
    third
        .write_all(healthz_request(&service.addr).as_bytes())
        .unwrap();
    // Not served while two connections hold both places. (Only a false pass is possible
    // here: nothing can answer while the cap holds.)
    third
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut byte = [0u8; 1];
    let early = third.read(&mut byte);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "answered past the cap: {early:?}"
    );
    drop(idle);
    third
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = String::new();
    third.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

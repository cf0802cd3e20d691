//! Opening a URL for the person, only ever an http(s) one and only when there is a desktop
//! to show it on (`$BROWSER`, else `xdg-open` with a display); otherwise the caller prints
//! it for them to open by hand.

use std::collections::BTreeMap;

/// Tries to open `url`; returns whether a browser was started.
pub fn open(url: &str, env: &BTreeMap<String, String>) -> bool {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return false;
    }
    let desktop = env.contains_key("DISPLAY") || env.contains_key("WAYLAND_DISPLAY");
    let program = match env.get("BROWSER").filter(|b| !b.is_empty()) {
        Some(b) => b.clone(),
        None if desktop => "xdg-open".to_string(),
        None => return false,
    };
    let spawned = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reaped in the background, so no zombie is left.
            std::thread::spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}

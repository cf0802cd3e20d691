//! Turning a server's sandbox intent into the exact grants the supervisor enforces: the
//! system and runtime paths its command needs (found from the program, its `#!`
//! interpreter and the package its script lives in), the folders its arguments and
//! environment name (its roots), the caches of `npx` and `uvx` when it is launched by one,
//! its private temp folder, what the configuration adds, and the one TCP port it may
//! connect to (its egress proxy). Pure but for reading the filesystem to resolve paths.

use mcp_host_config::SandboxSpec;
use mcp_host_core::confinement::HostRule;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What one sandboxed server may do, as the supervisor enforces it (sent to it as JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Read and execute (system, runtime, the server's own package).
    pub exec: Vec<PathBuf>,
    /// Read only.
    pub read: Vec<PathBuf>,
    /// Read and write, never execute (its roots, its temp folder, a launcher's cache).
    pub write: Vec<PathBuf>,
    /// Device files it may read and write (`/dev/null` and friends).
    pub devices: Vec<PathBuf>,
    /// TCP ports it may connect to (its proxy). Nothing may be bound.
    pub connect: Vec<u16>,
    /// Refuse to start when the kernel cannot enforce all of this.
    pub require: bool,
    /// Its private temp folder, removed when it stops.
    pub temp: Option<PathBuf>,
    /// Run it in a network namespace of its own, its proxy's port the only thing there
    /// (`netns.rs`); its end of the host's socket is fd 4.
    #[serde(default)]
    pub netns: bool,
}

/// What a profile was built from, beside the sandbox spec.
pub struct Launch<'a> {
    /// The program as resolved on `PATH`.
    pub program: &'a Path,
    pub args: &'a [String],
    /// Only the variables the configuration declared (their paths may be roots).
    pub declared_env: &'a BTreeMap<String, String>,
    /// The environment the server gets (`PATH`, `HOME`, the caches' variables).
    pub env: &'a BTreeMap<String, String>,
    pub cwd: &'a Path,
    /// The host's own data and configuration folders: never granted by an argument.
    pub protected: &'a [PathBuf],
}

/// A built profile, with the hosts its launcher needs and the folders that were named but
/// not granted (shown to the person).
#[derive(Debug, Default)]
pub struct Built {
    pub profile: Profile,
    pub launcher_hosts: Vec<HostRule>,
    pub not_granted: Vec<String>,
    /// Folders to make before the start (a launcher's cache on first use: Landlock can only
    /// grant what exists).
    pub make: Vec<PathBuf>,
}

/// System folders every program reads and runs from.
const SYSTEM_EXEC: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
];
/// Read-only system files: the loader, TLS roots, name resolution, users, time zones. Not
/// `/etc` as a whole (`/etc/shadow`, `/etc/ssh` and the like stay out).
const SYSTEM_READ: &[&str] = &[
    "/proc",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/etc/alternatives",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/gitconfig",
    "/etc/npmrc",
    "/etc/inputrc",
    "/etc/terminfo",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/xdg",
];
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Files whose presence marks the top of a package: a script's package is readable.
const PACKAGE_MARKERS: &[&str] = &[
    "package.json",
    "pyproject.toml",
    "setup.py",
    "Cargo.toml",
    "go.mod",
];

/// Builds the profile of one server. `temp` is its private temp folder (already made).
pub fn build(spec: &SandboxSpec, launch: &Launch<'_>, temp: &Path, proxy_port: u16) -> Built {
    let home = launch.env.get("HOME").map(PathBuf::from);
    let mut built = Built::default();
    let p = &mut built.profile;
    p.exec.extend(SYSTEM_EXEC.iter().map(PathBuf::from));
    p.read.extend(SYSTEM_READ.iter().map(PathBuf::from));
    p.devices.extend(DEVICES.iter().map(PathBuf::from));
    for program in runtime_programs(launch.program, launch.env) {
        p.exec.push(install_folder(&program, home.as_deref()));
    }
    // An interpreter's script: its package (its sources and dependencies) is readable.
    let script = (launch.args.iter())
        .map(|a| launch.cwd.join(a))
        .find(|path| path.is_file())
        .filter(|_| is_interpreter(launch.program));
    if let Some(script) = &script {
        let package = package_of(script);
        match refused_root(&package, home.as_deref(), launch.protected) {
            Some(why) => built
                .not_granted
                .push(format!("{} ({why})", package.display())),
            None => p.exec.push(package),
        }
    }
    if spec.argument_roots {
        let named = (launch.args.iter())
            .filter_map(|a| named_path(a, launch.cwd))
            .filter(|path| Some(path) != script.as_ref())
            .chain(
                launch
                    .declared_env
                    .values()
                    .filter_map(|v| named_path(v, launch.cwd)),
            )
            .map(|path| root_of(&path));
        for (root, make) in named {
            match refused_root(&root, home.as_deref(), launch.protected) {
                Some(why) => built
                    .not_granted
                    .push(format!("{} ({why})", root.display())),
                None => {
                    if make {
                        built.make.push(root.clone());
                    }
                    p.write.push(root);
                }
            }
        }
    }
    if let Some(launcher) = launcher(launch.program) {
        let (paths, hosts) = launcher.needs(launch.env, home.as_deref());
        built.make.extend(paths.write.iter().cloned());
        // A launcher runs what it fetched into its cache: written, then executed.
        p.exec.extend(paths.write.iter().cloned());
        p.write.extend(paths.write);
        // uv builds its environments on the Python it finds on PATH.
        if let Launcher::Uvx = launcher {
            for name in ["python3", "python"] {
                for program in on_path(name, launch.env)
                    .iter()
                    .flat_map(|p| runtime_programs(p, launch.env))
                {
                    p.exec.push(install_folder(&program, home.as_deref()));
                }
            }
        }
        p.read.extend(paths.read);
        built.launcher_hosts = hosts;
    }
    p.exec.extend(spec.read.iter().cloned());
    p.write.extend(spec.write.iter().cloned());
    p.write.push(temp.to_path_buf());
    p.temp = Some(temp.to_path_buf());
    p.connect.push(proxy_port);
    p.require = spec.require;
    for list in [&mut p.exec, &mut p.read, &mut p.write] {
        list.sort();
        list.dedup();
    }
    built
}

/// Whether a path is one every confined server is given (not worth showing a person).
pub fn is_system(path: &Path) -> bool {
    (SYSTEM_EXEC.iter().chain(SYSTEM_READ).chain(DEVICES)).any(|s| path == Path::new(s))
}

/// Whether a server confined by `spec` would have nothing of the user's to write and no
/// host to reach: no granted writes or hosts, no launcher (with its cache and registry),
/// and no root among its arguments and declared variables.
pub fn sealed(
    spec: &SandboxSpec,
    command: &str,
    args: &[String],
    declared_env: &BTreeMap<String, String>,
    cwd: &Path,
) -> bool {
    let names_a_root = || {
        (args.iter().chain(declared_env.values()))
            .find_map(|a| named_path(a, cwd))
            .is_some()
    };
    spec.is_sealed(false)
        && launcher(Path::new(command)).is_none()
        && !(spec.argument_roots && names_a_root())
}

/// The program and the interpreters its `#!` lines name (through `env`), each as run and
/// as its link resolves, so every installation folder it loads from is found.
fn runtime_programs(program: &Path, env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut next = Some(program.to_path_buf());
    // An interpreter chain is short (a shim, then the interpreter); a loop is not followed.
    for _ in 0..4 {
        let Some(current) = next.take() else { break };
        if found.contains(&current) {
            break;
        }
        found.push(current.clone());
        if let Ok(real) = current.canonicalize()
            && !found.contains(&real)
        {
            found.push(real);
        }
        next = interpreter(&current, env);
    }
    found
}

/// The interpreter a script's `#!` line names, resolved on `PATH` for `env NAME`.
fn interpreter(script: &Path, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = std::str::from_utf8(line.split(|b| *b == b'\n').next()?).ok()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name()? != "env" {
        return Some(first);
    }
    let name = words.find(|w| !w.starts_with('-'))?;
    on_path(name, env)
}

/// The first file called `name` on the `PATH` of `env`.
fn on_path(name: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let path = env.get("PATH")?;
    path.split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|candidate| candidate.is_file())
}

/// The folder a program was installed into: the prefix above its `bin` (a Node or Python
/// installation, a virtual environment, pyenv), else its own folder. Never the home
/// folder itself or `~/.local`, which hold much more than programs.
fn install_folder(program: &Path, home: Option<&Path>) -> PathBuf {
    let dir = program.parent().unwrap_or(Path::new("/"));
    let named_bin = dir
        .file_name()
        .is_some_and(|n| n == "bin" || n == "sbin" || n == "shims");
    match dir.parent() {
        Some(prefix)
            if named_bin
                && prefix != Path::new("/")
                && Some(prefix) != home
                && home.is_none_or(|h| prefix != h.join(".local")) =>
        {
            prefix.to_path_buf()
        }
        _ => dir.to_path_buf(),
    }
}

/// Whether a program runs a script named by its first file argument.
fn is_interpreter(program: &Path) -> bool {
    let Some(name) = program.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        name,
        "node" | "python" | "deno" | "bun" | "ruby" | "perl" | "sh" | "bash" | "tsx" | "ts-node"
    )
}

/// The package a script belongs to: for one installed into a `node_modules` tree, the
/// whole tree (its dependencies are hoisted beside it); else the nearest folder above it
/// (three at most) holding a package manifest, else the script's own folder.
fn package_of(script: &Path) -> PathBuf {
    let dir = script.parent().unwrap_or(Path::new("/"));
    if let Some(tree) = dir
        .ancestors()
        .filter(|d| d.ends_with("node_modules"))
        .last()
    {
        return tree.to_path_buf();
    }
    dir.ancestors()
        .take(4)
        .find(|d| PACKAGE_MARKERS.iter().any(|m| d.join(m).is_file()))
        .unwrap_or(dir)
        .to_path_buf()
}

/// The path an argument or a declared variable names, if it names one: absolute, or
/// relative from `./` or `../`; the value of `--flag=/path` too. Relative to `cwd`.
fn named_path(text: &str, cwd: &Path) -> Option<PathBuf> {
    let value = match text.split_once('=') {
        Some((flag, value)) if flag.starts_with('-') => value,
        _ => text,
    };
    let looks_like_path = value.starts_with('/')
        || value == "."
        || value == ".."
        || value.starts_with("./")
        || value.starts_with("../");
    (looks_like_path && !value.contains(':')).then(|| cwd.join(value))
}

/// What a named path grants: a folder is a root; a file (a data file, which servers
/// rewrite through a temporary file beside it, as SQLite keeps its journal there) makes
/// its folder a root, made first when it does not exist yet (`true`).
fn root_of(path: &Path) -> (PathBuf, bool) {
    if path.is_dir() {
        return (path.to_path_buf(), false);
    }
    let folder = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let make = !folder.is_dir();
    (folder, make)
}

/// Why a folder named on the command line is not granted on its own say: it is a system
/// folder, or holds the user's home or the host's data (those must be written in
/// `sandbox.filesystem.write`).
fn refused_root(root: &Path, home: Option<&Path>, protected: &[PathBuf]) -> Option<&'static str> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if root == Path::new("/") {
        return Some("the whole filesystem");
    }
    // The system's own trees, and the shared tops under which others' files live.
    const SYSTEM_TREES: &[&str] = &[
        "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/dev", "/proc", "/sys",
    ];
    const SHARED_TOPS: &[&str] = &["/var", "/run", "/opt", "/tmp", "/home", "/srv", "/mnt"];
    if SYSTEM_TREES.iter().any(|s| root.starts_with(s))
        || SHARED_TOPS.iter().any(|s| root == Path::new(s))
    {
        return Some("a system folder");
    }
    if home.is_some_and(|h| h.starts_with(&root)) {
        return Some("contains your home folder");
    }
    if (protected.iter()).any(|d| d.starts_with(&root) || root.starts_with(d)) {
        return Some("holds mcp-host's own data");
    }
    None
}

/// A package runner that fetches and caches what it runs.
enum Launcher {
    Npx,
    Uvx,
}

/// What a launcher reads and writes beside the server.
#[derive(Default)]
struct LauncherPaths {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
}

fn launcher(program: &Path) -> Option<Launcher> {
    match program.file_name()?.to_str()? {
        "npx" | "npm" | "pnpx" | "bunx" => Some(Launcher::Npx),
        "uvx" | "uv" => Some(Launcher::Uvx),
        _ => None,
    }
}

impl Launcher {
    fn needs(
        &self,
        env: &BTreeMap<String, String>,
        home: Option<&Path>,
    ) -> (LauncherPaths, Vec<HostRule>) {
        let var = |name: &str| env.get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let under_home = |rel: &str| home.map(|h| h.join(rel));
        let mut paths = LauncherPaths::default();
        let hosts: &[&str] = match self {
            Self::Npx => {
                paths
                    .write
                    .extend(var("npm_config_cache").or(under_home(".npm")));
                paths.read.extend(under_home(".npmrc"));
                &["registry.npmjs.org"]
            }
            Self::Uvx => {
                let cache = var("UV_CACHE_DIR")
                    .or(var("XDG_CACHE_HOME").map(|c| c.join("uv")))
                    .or(under_home(".cache/uv"));
                let data = var("XDG_DATA_HOME")
                    .map(|d| d.join("uv"))
                    .or(under_home(".local/share/uv"));
                paths.write.extend(cache.into_iter().chain(data));
                paths.read.extend(
                    var("XDG_CONFIG_HOME")
                        .map(|c| c.join("uv"))
                        .or(under_home(".config/uv")),
                );
                &["pypi.org", "files.pythonhosted.org"]
            }
        };
        let hosts = hosts
            .iter()
            .filter_map(|h| HostRule::parse(h).ok())
            .collect();
        (paths, hosts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_folders_are_prefixes_but_never_home() {
        let home = Path::new("/home/u");
        let f = |p: &str| install_folder(Path::new(p), Some(home));
        assert_eq!(f("/opt/node/bin/node"), Path::new("/opt/node"));
        assert_eq!(
            f("/home/u/.pyenv/shims/python3"),
            Path::new("/home/u/.pyenv")
        );
        assert_eq!(f("/home/u/bin/tool"), Path::new("/home/u/bin"));
        assert_eq!(f("/home/u/.local/bin/uvx"), Path::new("/home/u/.local/bin"));
        assert_eq!(f("/srv/fake-server"), Path::new("/srv"));
    }

    #[test]
    fn folders_holding_home_or_host_data_are_not_roots_on_their_own_say() {
        let home = Some(Path::new("/home/u"));
        let data = &[PathBuf::from("/home/u/.local/share/mcp-host")][..];
        assert!(refused_root(Path::new("/"), home, data).is_some());
        assert!(refused_root(Path::new("/home"), home, data).is_some());
        assert!(refused_root(Path::new("/home/u/.local"), home, data).is_some());
        assert!(refused_root(Path::new("/home/u/.local/share/mcp-host/x"), home, data).is_some());
        assert!(refused_root(Path::new("/home/u/project"), home, data).is_none());
        assert!(refused_root(Path::new("/etc/ssh"), home, data).is_some());
        assert!(refused_root(Path::new("/tmp"), home, data).is_some());
        assert!(refused_root(Path::new("/tmp/work"), home, data).is_none());
    }

    #[test]
    fn a_profile_grants_roots_runtime_and_temp_and_nothing_of_home() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let home = dir.path().join("home");
        let pkg = dir.path().join("pkg");
        for d in [&root, &home, &pkg.join("dist")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(pkg.join("package.json"), "{}").unwrap();
        std::fs::write(pkg.join("dist/index.js"), "").unwrap();
        let env = BTreeMap::from([
            ("HOME".to_string(), home.display().to_string()),
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ]);
        let declared = BTreeMap::from([(
            "DATA".to_string(),
            root.join("memory.jsonl").display().to_string(),
        )]);
        let args = vec![
            pkg.join("dist/index.js").display().to_string(),
            root.display().to_string(),
            home.display().to_string(),
        ];
        let launch = Launch {
            program: Path::new("/usr/bin/node"),
            args: &args,
            declared_env: &declared,
            env: &env,
            cwd: dir.path(),
            protected: &[],
        };
        let temp = dir.path().join("tmp");
        let built = build(&SandboxSpec::default(), &launch, &temp, 4242);
        let p = &built.profile;
        assert!(p.exec.contains(&pkg), "{p:?}");
        let hoisted = Path::new("/srv/app/node_modules/@scope/server/dist/index.js");
        assert_eq!(package_of(hoisted), Path::new("/srv/app/node_modules"));
        assert_eq!(p.write, vec![root, temp.clone()]);
        assert!(!p.read.iter().chain(&p.exec).any(|x| x.starts_with(&home)));
        assert_eq!(built.not_granted.len(), 1, "{:?}", built.not_granted);
        assert_eq!(p.connect, [4242]);
        let narrowed = SandboxSpec {
            argument_roots: false,
            ..SandboxSpec::default()
        };
        assert_eq!(build(&narrowed, &launch, &temp, 1).profile.write, [temp]);
    }
}

//! Provider API keys kept outside `config.yaml`: the file `wasmgate login` writes, and the order
//! in which `serve` looks for a provider's key (the config, else `<NAME>_API_KEY`, else the file).
//!
//! The file is YAML (`<provider>: <key>`), mode 0600 in a 0700 directory, under the user's config
//! directory: `$WASMGATE_CREDENTIALS`, else `$XDG_CONFIG_HOME/wasmgate/credentials.yaml`, else
//! `~/.config/wasmgate/credentials.yaml`. It is replaced atomically, so a reader never sees half
//! of it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Config;
use crate::secret::Secret;

/// Keys by provider name.
#[derive(Default)]
pub struct Credentials {
    keys: BTreeMap<String, Secret>,
}

/// Where the credentials file is, from the environment.
pub fn default_path() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var("WASMGATE_CREDENTIALS") {
        return Some(PathBuf::from(path));
    }
    let config_dir = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config_dir.join("wasmgate").join("credentials.yaml"))
}

/// The environment variable `serve` reads a provider's key from: `groq` → `GROQ_API_KEY`,
/// `azure-openai` → `AZURE_OPENAI_API_KEY`.
pub fn env_var(provider: &str) -> String {
    let name: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{name}_API_KEY")
}

impl Credentials {
    /// Reads the file; a missing file holds no keys.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        // The parse error could quote the file's text, which is secret.
        let keys: Option<BTreeMap<String, Secret>> = serde_yaml::from_str(&text)
            .map_err(|_| anyhow::anyhow!("{} is not a map of provider keys", path.display()))?;
        Ok(Self {
            keys: keys.unwrap_or_default(),
        })
    }

    pub fn get(&self, provider: &str) -> Option<&Secret> {
        self.keys.get(provider)
    }

    pub fn providers(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    pub fn set(&mut self, provider: &str, key: Secret) {
        self.keys.insert(provider.to_owned(), key);
    }

    pub fn remove(&mut self, provider: &str) -> bool {
        self.keys.remove(provider).is_some()
    }

    /// Writes the file readable by its owner only, replacing it atomically.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let map: BTreeMap<&str, &str> = self
            .keys
            .iter()
            .map(|(name, key)| (name.as_str(), key.expose()))
            .collect();
        let text = serde_yaml::to_string(&map)?;
        let tmp = dir.join(format!(".credentials.{}.tmp", std::process::id()));
        let mut file = private_file(&tmp)?;
        file.write_all(b"# wasmgate provider keys, written by `wasmgate login`.\n")?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

#[cfg(unix)]
fn private_file(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(())
}

/// Gives every provider entry without an `api_key` the key from `env` (`<NAME>_API_KEY`), else
/// from `file`. Returns the names of the entries that got theirs from the file.
pub fn fill_keys(
    config: &mut Config,
    env: impl Fn(&str) -> Option<String>,
    file: &Credentials,
) -> Vec<String> {
    let mut from_file = Vec::new();
    for (name, entry) in &mut config.providers {
        if entry.api_key.is_some() {
            continue;
        }
        if let Some(key) = env(&env_var(name)).filter(|k| !k.is_empty()) {
            entry.api_key = Some(Secret::new(key));
        } else if let Some(key) = file.get(name) {
            entry.api_key = Some(key.clone());
            from_file.push(name.clone());
        }
    }
    from_file
}

/// Fills each server's missing `token`: from `<NAME>_MCP_TOKEN` in `env`, else from the
/// credentials file's `mcp-<name>` entry.
pub fn fill_mcp_tokens(
    mcp: &mut crate::config::mcp::McpConfig,
    env: impl Fn(&str) -> Option<String>,
    file: &Credentials,
) {
    for (name, server) in &mut mcp.servers {
        if server.token.is_some() || server.transport == crate::config::mcp::McpTransport::Stdio {
            continue;
        }
        let var = format!("{}_MCP_TOKEN", name.replace('-', "_").to_ascii_uppercase());
        if let Some(token) = env(&var).filter(|t| !t.is_empty()) {
            server.token = Some(Secret::new(token));
        } else if let Some(token) = file.get(&format!("mcp-{name}")) {
            server.token = Some(token.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn env_var_names_follow_the_provider() {
        assert_eq!(env_var("groq"), "GROQ_API_KEY");
        assert_eq!(env_var("azure-openai"), "AZURE_OPENAI_API_KEY");
    }

    #[test]
    fn the_config_wins_then_the_environment_then_the_file() {
        let mut config = Config::from_yaml(
            "providers:
               a: { plugin: openai, api_key: from-config }
               b: { plugin: openai }
               c: { plugin: openai }
               d: { plugin: openai }",
        )
        .unwrap();
        let mut file = Credentials::default();
        for name in ["a", "b", "c"] {
            file.set(name, Secret::new(format!("file-{name}")));
        }
        let env = |var: &str| (var == "B_API_KEY").then(|| "from-env".to_owned());
        let from_file = fill_keys(&mut config, env, &file);
        let key = |name: &str| {
            config.providers[name]
                .api_key
                .as_ref()
                .map(|k| k.expose().to_owned())
        };
        assert_eq!(key("a").as_deref(), Some("from-config"));
        assert_eq!(key("b").as_deref(), Some("from-env"));
        assert_eq!(key("c").as_deref(), Some("file-c"));
        assert_eq!(key("d"), None);
        assert_eq!(from_file, ["c"]);
    }

    #[test]
    fn mcp_servers_take_their_token_from_the_environment_then_the_file() {
        let mut config = Config::from_yaml(
            "mcp: { servers: { my-search: { url: 'http://a/mcp' }, docs: { url: 'http://b/mcp' },
                               set: { url: 'http://c/mcp', token: own } } }",
        )
        .unwrap();
        let mut file = Credentials::default();
        file.set("mcp-docs", Secret::new("from-file"));
        file.set("mcp-set", Secret::new("not-this"));
        let env = |var: &str| (var == "MY_SEARCH_MCP_TOKEN").then(|| "from-env".to_owned());
        fill_mcp_tokens(&mut config.mcp, env, &file);
        let token = |name: &str| {
            config.mcp.servers[name]
                .token
                .as_ref()
                .map(|t| t.expose().to_owned())
        };
        assert_eq!(token("my-search").as_deref(), Some("from-env"));
        assert_eq!(token("docs").as_deref(), Some("from-file"));
        assert_eq!(token("set").as_deref(), Some("own"));
    }

    #[test]
    fn the_file_is_private_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("wasmgate-cred-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("nested").join("credentials.yaml");
        let mut creds = Credentials::load(&path).unwrap();
        assert_eq!(creds.providers().count(), 0);
        creds.set("groq", Secret::new("gsk-secret"));
        creds.save(&path).unwrap();
        let back = Credentials::load(&path).unwrap();
        assert_eq!(back.get("groq").map(Secret::expose), Some("gsk-secret"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
        std::fs::write(&path, "groq: [not, a, key]").unwrap();
        let error = Credentials::load(&path).err().unwrap().to_string();
        assert!(!error.contains("not, a"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! `wasmgate login <provider>`: reads a provider's API key from a hidden prompt (or standard
//! input when it is not a terminal) and keeps it in the credentials file, so that `config.yaml`
//! needs no secrets. The key is never printed.

use std::io::{BufRead, IsTerminal as _, Write};
use std::path::Path;

use crate::credentials::{Credentials, env_var};
use crate::secret::Secret;

/// Stores `provider`'s key read from the terminal or from `input`.
pub fn login(
    provider: &str,
    path: &Path,
    input: &mut dyn BufRead,
    note: &mut dyn Write,
) -> anyhow::Result<()> {
    check_name(provider)?;
    let key = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("API key for {provider} (input hidden): "))?
    } else {
        let mut line = String::new();
        input.read_line(&mut line)?;
        line
    };
    let key = key.trim();
    if key.is_empty() {
        anyhow::bail!("no key given: nothing was stored");
    }
    let mut credentials = Credentials::load(path)?;
    credentials.set(provider, Secret::new(key));
    credentials.save(path)?;
    writeln!(
        note,
        "Stored the key for `{provider}` in {} (mode 0600). `serve` uses it for the provider \
         entry `{provider}` when neither the config nor ${} sets one.",
        path.display(),
        env_var(provider)
    )?;
    Ok(())
}

/// Forgets `provider`'s key.
pub fn logout(provider: &str, path: &Path, note: &mut dyn Write) -> anyhow::Result<()> {
    let mut credentials = Credentials::load(path)?;
    if !credentials.remove(provider) {
        anyhow::bail!("no key is stored for `{provider}` in {}", path.display());
    }
    credentials.save(path)?;
    writeln!(note, "Removed the key for `{provider}`.")?;
    Ok(())
}

/// The providers with a stored key (not the keys).
pub fn list(path: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let credentials = Credentials::load(path)?;
    for provider in credentials.providers() {
        writeln!(out, "{provider}")?;
    }
    Ok(())
}

fn check_name(provider: &str) -> anyhow::Result<()> {
    let ok = !provider.is_empty()
        && provider
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if !ok {
        anyhow::bail!("`{provider}` is not a provider name (letters, digits, - _ .)");
    }
    Ok(())
}

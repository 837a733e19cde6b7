//! An on-disk cache of precompiled components, keyed by the component's hash and the engine's
//! compatibility hash, so a restart skips the 100+ ms compile of each plugin.

use std::hash::{Hash, Hasher};
use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Result};

pub(super) fn load_or_compile(engine: &Engine, dir: &Path, wasm: &[u8]) -> Result<Component> {
    let path = dir.join(format!("{}.cwasm", cache_key(engine, wasm)));
    if path.exists() {
        match deserialize(engine, &path) {
            Ok(component) => return Ok(component),
            Err(e) => tracing::warn!("ignoring unusable cached component {}: {e}", path.display()),
        }
    }
    let compiled = engine.precompile_component(wasm)?;
    if let Err(e) = store(dir, &path, &compiled) {
        tracing::warn!("cannot cache compiled component in {}: {e}", dir.display());
    }
    #[expect(
        unsafe_code,
        reason = "the bytes were produced just above by this engine"
    )]
    // SAFETY: `compiled` comes from `precompile_component` of this very engine.
    unsafe {
        Component::deserialize(engine, &compiled)
    }
}

#[expect(
    unsafe_code,
    reason = "wasmtime's deserialisation of precompiled code is unsafe"
)]
fn deserialize(engine: &Engine, path: &Path) -> Result<Component> {
    // SAFETY: the file is written only by `store` below, atomically, into a directory created
    // for this cache, and its name binds it to the source's hash and this engine's settings;
    // wasmtime also checks the artefact's header against the engine before using it.
    unsafe { Component::deserialize_file(engine, path) }
}

fn store(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let engine_hash = hasher.finish();
    let digest = Sha256::digest(wasm);
    format!("{}-{engine_hash:016x}", hex::encode(&digest[..16]))
}

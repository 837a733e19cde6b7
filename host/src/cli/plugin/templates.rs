//! The starting files of a new plugin project, per language and kind.

use super::kind::Kind;
use super::lang::Lang;

macro_rules! template {
    ($path:literal) => {
        include_str!(concat!("templates/", $path))
    };
}

/// (file name in the project, contents with `{{name}}`, `{{kind}}`, `{{crate}}`, `{{sdk}}` holes)
pub fn files(lang: Lang, kind: Kind) -> Vec<(&'static str, &'static str)> {
    let ignore = (
        ".gitignore",
        ".wasmgate/\n*.wasm\n__pycache__/\nnode_modules/\ntarget/\n",
    );
    match (lang, kind) {
        (Lang::Python, Kind::Router) => vec![
            ("app.py", template!("python/router.py")),
            ("app_test.py", template!("python/router_test.py")),
            ignore,
        ],
        (Lang::Python, Kind::Limiter) => vec![
            ("app.py", template!("python/limiter.py")),
            ("app_test.py", template!("python/limiter_test.py")),
            ignore,
        ],
        (Lang::Python, Kind::Provider) => vec![
            ("app.py", template!("python/provider.py")),
            ("app_test.py", template!("python/provider_test.py")),
            ignore,
        ],
        (Lang::Js, Kind::Router) => vec![
            ("app.js", template!("js/router.js")),
            ("app.test.js", template!("js/router.test.js")),
            ("package.json", template!("js/package.json")),
            ignore,
        ],
        (Lang::Js, Kind::Limiter) => vec![
            ("app.js", template!("js/limiter.js")),
            ("app.test.js", template!("js/limiter.test.js")),
            ("package.json", template!("js/package.json")),
            ignore,
        ],
        (Lang::Js, Kind::Provider) => vec![
            ("app.js", template!("js/provider.js")),
            ("app.test.js", template!("js/provider.test.js")),
            ("package.json", template!("js/package.json")),
            ignore,
        ],
        (Lang::Rust, Kind::Router) => vec![
            ("Cargo.toml", template!("rust/Cargo.toml")),
            ("src/lib.rs", template!("rust/router.rs")),
            ignore,
        ],
        (Lang::Rust, Kind::Limiter) => vec![
            ("Cargo.toml", template!("rust/Cargo.toml")),
            ("src/lib.rs", template!("rust/limiter.rs")),
            ignore,
        ],
        (Lang::Rust, Kind::Guard) => vec![
            ("Cargo.toml", template!("rust/Cargo.toml")),
            ("src/lib.rs", template!("rust/guard.rs")),
            ignore,
        ],
        (Lang::Python, Kind::Guard) => vec![
            ("app.py", template!("python/guard.py")),
            ("app_test.py", template!("python/guard_test.py")),
            ignore,
        ],
        (Lang::Js, Kind::Guard) => vec![
            ("app.js", template!("js/guard.js")),
            ("app.test.js", template!("js/guard.test.js")),
            ("package.json", template!("js/package.json")),
            ignore,
        ],
        (Lang::Rust, Kind::CacheKey) => vec![
            ("Cargo.toml", template!("rust/Cargo.toml")),
            ("src/lib.rs", template!("rust/cache_key.rs")),
            ignore,
        ],
        (Lang::Python, Kind::CacheKey) => vec![
            ("app.py", template!("python/cache_key.py")),
            ("app_test.py", template!("python/cache_key_test.py")),
            ignore,
        ],
        (Lang::Js, Kind::CacheKey) => vec![
            ("app.js", template!("js/cache_key.js")),
            ("app.test.js", template!("js/cache_key.test.js")),
            ("package.json", template!("js/package.json")),
            ignore,
        ],
        (Lang::Rust, Kind::Provider) => vec![
            ("Cargo.toml", template!("rust/Cargo.toml")),
            ("src/lib.rs", template!("rust/provider.rs")),
            ignore,
        ],
    }
}

//! The dialect registry: every dialect plugin of a config with what it declared (its routes,
//! where its key comes from), and the matching of a request's method and path to one of its
//! routes. The server mounts whatever this holds; no dialect is known to the host by name.

use std::sync::Arc;

use super::bindings::dialect_types::{KeySource, RouteKind};
use super::dialect::DialectPlugin;
use super::failure::PluginFailure;
use super::slots::SlotKind;

/// Characters of a path parameter (the model) and of a query value, at most.
const PARAM_MAX: usize = 512;
/// Query parameters of one request, at most.
const QUERY_MAX: usize = 16;
/// Path prefixes the host serves itself: no dialect may declare a route under them.
const RESERVED: [&str; 5] = ["/admin", "/usage", "/health", "/metrics", "/ui"];

/// The dialects of one config.
#[derive(Default)]
pub struct DialectRegistry {
    dialects: Vec<Arc<Mounted>>,
}

/// One dialect plugin and what it declared.
pub struct Mounted {
    /// The `dialects:` key it is configured under.
    pub key: String,
    /// The name it declared, which providers that speak it natively list.
    pub name: String,
    pub plugin: DialectPlugin,
    pub routes: Vec<MountedRoute>,
    pub keys: Vec<KeySource>,
    pub typed_events: bool,
    /// What the ids of its translated answers begin with (`msg_`).
    pub answer_id_prefix: String,
    /// Whether it chains turns through the gateway's response store.
    pub chains_turns: bool,
    /// Whether its answers from a native target can be guarded as they are; when not, a
    /// request whose answer is guarded is translated.
    pub native_answers_guarded: bool,
}

/// One declared route.
pub struct MountedRoute {
    pub method: http::Method,
    pub name: String,
    pub kind: RouteKind,
    pattern: Pattern,
}

/// A request's route: the dialect, which of its routes, and the route's parameters.
#[derive(Clone)]
pub struct Matched {
    pub dialect: Arc<Mounted>,
    route: usize,
    /// Path parameters (percent-decoded), then the query's (its key parameters left out).
    pub params: Vec<(String, String)>,
}

/// Why a declaration cannot be mounted.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{0}")]
    Plugin(#[from] PluginFailure),
    #[error("route `{path}`: {message}")]
    Route { path: String, message: String },
    #[error("`{method} {path}` is declared by the dialect `{other}` too")]
    Clash {
        method: String,
        path: String,
        other: String,
    },
}

/// Why a path that is a dialect's was not answered.
pub enum Unmatched {
    /// No dialect serves the path.
    NoRoute,
    /// A dialect serves the path with other methods: these, for the `Allow` header.
    Method(Arc<Mounted>, Vec<http::Method>),
    /// A parameter too long, too many query parameters, or not UTF-8 once decoded.
    BadParams(Arc<Mounted>, String),
}

impl DialectRegistry {
    /// Asks each plugin to describe itself and checks the routes: well formed, outside the
    /// host's own prefixes, and not declared twice.
    pub async fn mount(&mut self, key: &str, plugin: DialectPlugin) -> Result<(), RegistryError> {
        let declaration = plugin.start(SlotKind::Call).await?.describe().await?;
        let mut routes = Vec::new();
        for route in declaration.routes {
            let invalid = |message: &str| RegistryError::Route {
                path: route.path.clone(),
                message: message.to_owned(),
            };
            let method = match route.method.as_str() {
                "GET" => http::Method::GET,
                "POST" => http::Method::POST,
                _ => return Err(invalid("the method must be GET or POST")),
            };
            let pattern = Pattern::parse(&route.path).map_err(|m| invalid(&m))?;
            if RESERVED
                .iter()
                .any(|p| route.path == *p || route.path.starts_with(&format!("{p}/")))
            {
                return Err(invalid("the host serves this path itself"));
            }
            let mine = routes
                .iter()
                .map(|r: &MountedRoute| (r, declaration.name.as_str()));
            let theirs = self
                .dialects
                .iter()
                .flat_map(|d| d.routes.iter().map(|r| (r, d.key.as_str())));
            if let Some((_, other)) = mine
                .chain(theirs)
                .find(|(r, _)| r.method == method && r.pattern.source == route.path)
            {
                return Err(RegistryError::Clash {
                    method: route.method.clone(),
                    path: route.path.clone(),
                    other: other.to_owned(),
                });
            }
            routes.push(MountedRoute {
                method,
                name: route.name,
                kind: route.kind,
                pattern,
            });
        }
        // The most literal text first, so `/models/{model}:count` wins over `/models/{model}`.
        routes.sort_by_key(|r| std::cmp::Reverse(r.pattern.literal_len()));
        self.dialects.push(Arc::new(Mounted {
            key: key.to_owned(),
            name: declaration.name,
            plugin,
            routes,
            keys: declaration.keys,
            typed_events: declaration.typed_events,
            answer_id_prefix: declaration.answer_id_prefix,
            chains_turns: declaration.chains_turns,
            native_answers_guarded: declaration.native_answers_guarded,
        }));
        Ok(())
    }

    /// The dialects, in config order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Mounted>> {
        self.dialects.iter()
    }

    /// The dialect configured under `key`.
    pub fn get(&self, key: &str) -> Option<&Arc<Mounted>> {
        self.dialects.iter().find(|d| d.key == key)
    }

    /// The route `method path` is, with its parameters; `query` is the raw query string.
    pub fn find(
        &self,
        method: &http::Method,
        path: &str,
        query: Option<&str>,
    ) -> Result<Matched, Unmatched> {
        let mut other_method = None;
        let mut allowed: Vec<http::Method> = Vec::new();
        for dialect in &self.dialects {
            for (index, route) in dialect.routes.iter().enumerate() {
                let Some(raw) = route.pattern.matches(path) else {
                    continue;
                };
                if route.method != *method {
                    other_method.get_or_insert_with(|| Arc::clone(dialect));
                    if !allowed.contains(&route.method) {
                        allowed.push(route.method.clone());
                    }
                    continue;
                }
                let params = params(dialect, raw, query)
                    .map_err(|message| Unmatched::BadParams(Arc::clone(dialect), message))?;
                return Ok(Matched {
                    dialect: Arc::clone(dialect),
                    route: index,
                    params,
                });
            }
        }
        Err(other_method.map_or(Unmatched::NoRoute, |dialect| {
            Unmatched::Method(dialect, allowed)
        }))
    }
}

impl MountedRoute {
    /// The path as the dialect declared it (`/v1beta/models/{model}:generateContent`).
    pub fn path(&self) -> &str {
        &self.pattern.source
    }
}

impl Matched {
    pub fn route(&self) -> &MountedRoute {
        &self.dialect.routes[self.route]
    }

    /// The parameter `name`, if the request has it.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The path parameters decoded and the query's added, bounded.
fn params(
    dialect: &Mounted,
    raw: Vec<(String, &str)>,
    query: Option<&str>,
) -> Result<Vec<(String, String)>, String> {
    let mut params = Vec::with_capacity(raw.len());
    for (name, value) in raw {
        let decoded = percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .map_err(|_| format!("The `{name}` in the URL is not percent-encoded UTF-8."))?;
        if decoded.len() > PARAM_MAX {
            return Err(format!(
                "The `{name}` in the URL is longer than {PARAM_MAX} bytes."
            ));
        }
        params.push((name, decoded.into_owned()));
    }
    let key_params: Vec<&str> = dialect
        .keys
        .iter()
        .filter_map(|k| match k {
            KeySource::Query(name) => Some(name.as_str()),
            KeySource::Header(_) => None,
        })
        .collect();
    for (i, (name, value)) in form_urlencoded::parse(query.unwrap_or("").as_bytes()).enumerate() {
        if i >= QUERY_MAX {
            return Err(format!(
                "The URL has more than {QUERY_MAX} query parameters."
            ));
        }
        if key_params.contains(&name.as_ref()) {
            continue;
        }
        if name.len() > PARAM_MAX || value.len() > PARAM_MAX {
            return Err(format!(
                "A query parameter of the URL is longer than {PARAM_MAX} bytes."
            ));
        }
        params.push((name.into_owned(), value.into_owned()));
    }
    Ok(params)
}

/// A declared path: literal text and `{name}` parameters.
struct Pattern {
    source: String,
    parts: Vec<Part>,
}

enum Part {
    Literal(String),
    Param(String),
}

impl Pattern {
    fn parse(path: &str) -> Result<Self, String> {
        if !path.starts_with('/') {
            return Err("a path starts with `/`".to_owned());
        }
        let mut parts = Vec::new();
        let mut rest = path;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or("a `{` is not closed")?;
                    let name = &rest[1..end];
                    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    {
                        return Err(format!("parameter `{name}`: a-z and `_` only"));
                    }
                    if matches!(parts.last(), Some(Part::Param(_))) {
                        return Err("two parameters need literal text between them".to_owned());
                    }
                    parts.push(Part::Param(name.to_owned()));
                    rest = &rest[end + 1..];
                }
                Some(at) => {
                    parts.push(Part::Literal(rest[..at].to_owned()));
                    rest = &rest[at..];
                }
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        if parts
            .iter()
            .any(|p| matches!(p, Part::Literal(l) if l.contains('}')))
        {
            return Err("a `}` without its `{`".to_owned());
        }
        Ok(Self {
            source: path.to_owned(),
            parts,
        })
    }

    fn literal_len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.len(),
                Part::Param(_) => 0,
            })
            .sum()
    }

    /// The raw (still percent-encoded) parameters of `path`, if it matches.
    fn matches<'p>(&self, path: &'p str) -> Option<Vec<(String, &'p str)>> {
        let mut params = Vec::new();
        match_parts(&self.parts, path, &mut params).then_some(params)
    }
}

/// Matches `parts` against all of `path`. A parameter takes one or more characters up to an
/// occurrence of the literal after it: the last one, so a model id may itself hold `:` or `/`.
fn match_parts<'p>(parts: &[Part], path: &'p str, params: &mut Vec<(String, &'p str)>) -> bool {
    match parts {
        [] => path.is_empty(),
        [Part::Literal(literal), rest @ ..] => path
            .strip_prefix(literal.as_str())
            .is_some_and(|after| match_parts(rest, after, params)),
        [Part::Param(name)] => {
            let ok = !path.is_empty();
            if ok {
                params.push((name.clone(), path));
            }
            ok
        }
        [Part::Param(name), Part::Literal(literal), rest @ ..] => {
            for (at, _) in path.rmatch_indices(literal.as_str()) {
                if at == 0 {
                    continue;
                }
                let mark = params.len();
                params.push((name.clone(), &path[..at]));
                if match_parts(rest, &path[at + literal.len()..], params) {
                    return true;
                }
                params.truncate(mark);
            }
            false
        }
        // `parse` never puts two parameters side by side.
        [Part::Param(_), Part::Param(_), ..] => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn matched(pattern: &str, path: &str) -> Option<Vec<(String, String)>> {
        let pattern = Pattern::parse(pattern).unwrap();
        pattern
            .matches(path)
            .map(|params| params.into_iter().map(|(k, v)| (k, v.to_owned())).collect())
    }

    #[test]
    fn a_parameter_may_end_inside_a_segment() {
        let p = "/v1beta/models/{model}:generateContent";
        let got = matched(p, "/v1beta/models/gemini-2.0-flash:generateContent").unwrap();
        assert_eq!(got, [("model".to_owned(), "gemini-2.0-flash".to_owned())]);
        // A gateway id holds a `/`; a model name may hold a `:` of its own.
        let got = matched(p, "/v1beta/models/gemini/gemini-2.0-flash:generateContent").unwrap();
        assert_eq!(got[0].1, "gemini/gemini-2.0-flash");
        let got = matched(p, "/v1beta/models/a:b:generateContent").unwrap();
        assert_eq!(got[0].1, "a:b");
        assert!(matched(p, "/v1beta/models/:generateContent").is_none());
        assert!(matched(p, "/v1beta/models/x:generateContentX").is_none());
        assert!(matched(p, "/v1beta/models/x:streamGenerateContent").is_none());
    }

    #[test]
    fn literal_paths_match_exactly() {
        assert!(matched("/v1/messages", "/v1/messages").is_some());
        assert!(matched("/v1/messages", "/v1/messages/").is_none());
        assert!(matched("/v1/messages", "/v1/messagesx").is_none());
        let got = matched("/v1beta/models/{model}", "/v1beta/models/g/m").unwrap();
        assert_eq!(got[0].1, "g/m");
        assert!(matched("/v1beta/models/{model}", "/v1beta/models/").is_none());
    }

    #[test]
    fn malformed_patterns_are_refused() {
        for bad in ["v1/x", "/a/{", "/a/{}", "/a/{Model}", "/a/{x}{y}", "/a/}"] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
    }
}

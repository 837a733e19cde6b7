//! Where a catalog comes from: the built-in `models.yaml`, a file's text, a file on disk.

use std::path::Path;
use std::sync::LazyLock;

use super::by_provider::Catalog;
use super::catalog_error::CatalogError;
use super::file::CatalogFile;

/// The built-in catalog's text, embedded in the binary.
pub const BUILTIN_YAML: &str = include_str!("models.yaml");

static BUILTIN: LazyLock<Catalog> = LazyLock::new(|| {
    Catalog::from_yaml(BUILTIN_YAML).unwrap_or_else(|e| {
        // A unit test parses the embedded file, so this is not reached in a tested build.
        tracing::error!("the built-in model catalog does not load: {e}");
        Catalog::default()
    })
});

impl Catalog {
    /// The catalog built into the binary, parsed on first use.
    pub fn builtin() -> &'static Catalog {
        &BUILTIN
    }

    /// Parses a catalog file's text (the schema of `models.yaml`).
    pub fn from_yaml(text: &str) -> Result<Self, CatalogError> {
        let value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| CatalogError::Yaml(e.to_string()))?;
        if value.is_null() {
            return Ok(Self::default());
        }
        let file: CatalogFile = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            CatalogError::key(path, e.into_inner().to_string())
        })?;
        Self::try_from(file)
    }

    pub fn from_file(path: &Path) -> Result<Self, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_yaml(&text)
    }
}

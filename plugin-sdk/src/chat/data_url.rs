//! `data:` URLs, in which OpenAI clients send images and files inline.

/// A base64 `data:` URL, split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataUrl<'a> {
    /// The media type, e.g. `image/png`.
    pub media_type: &'a str,
    /// The base64 data, as sent.
    pub data: &'a str,
}

impl<'a> DataUrl<'a> {
    /// Reads `data:<media type>[;<parameters>];base64,<data>`. `None` for any other URL, and for
    /// `data:` URLs that are not base64 (no upstream takes percent-encoded bytes).
    pub fn parse(url: &'a str) -> Option<Self> {
        let rest = url.strip_prefix("data:")?;
        let (header, data) = rest.split_once(',')?;
        let mut params = header.split(';');
        let media_type = params.next().filter(|m| !m.is_empty())?;
        if !params.any(|p| p.eq_ignore_ascii_case("base64")) {
            return None;
        }
        Some(DataUrl { media_type, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_base64_data_urls() {
        assert_eq!(
            DataUrl::parse("data:image/png;base64,iVBOR"),
            Some(DataUrl {
                media_type: "image/png",
                data: "iVBOR"
            })
        );
        assert_eq!(
            DataUrl::parse("data:application/pdf;name=a.pdf;base64,JVBE").map(|d| d.media_type),
            Some("application/pdf")
        );
        assert_eq!(DataUrl::parse("data:text/plain,hello"), None);
        assert_eq!(DataUrl::parse("https://example.com/a.png"), None);
        assert_eq!(DataUrl::parse("data:;base64,AA"), None);
    }
}

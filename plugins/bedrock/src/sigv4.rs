//! AWS Signature Version 4: signs an upstream request with the entry's credentials at a given
//! time, following <https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html>
//! (canonical request, string to sign, derived signing key, `Authorization` header).

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use wasmgate_plugin_sdk::HttpRequest;

const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// An access key. Its `Debug` prints the key id only.
#[derive(Clone)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"***")
            .field("session_token", &self.session_token.as_ref().map(|_| "***"))
            .finish()
    }
}

/// What a signature covers, already in canonical form but for the headers, which
/// [`canonical_request`] lower-cases, trims and sorts.
pub struct Canonical<'a> {
    pub method: &'a str,
    /// The path, URI-encoded as AWS expects it for the service (see [`canonical_uri`]).
    pub uri: &'a str,
    /// The query string with sorted, encoded parameters; empty for none.
    pub query: &'a str,
    /// Every header to sign, `host` and `x-amz-date` included.
    pub headers: &'a [(String, String)],
    pub payload: &'a [u8],
}

/// `20150830T123600Z` for a Unix time in seconds (UTC).
pub fn amz_date(unix_secs: u64) -> String {
    let days = unix_secs / 86_400;
    let secs = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// RFC 3986 percent-encoding of everything but the unreserved characters, upper-case hex, as
/// SigV4's `UriEncode` does.
pub fn uri_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The canonical URI of a request path as sent (each segment already encoded once): every
/// service but S3 encodes each segment a second time, so a model id's `:` (sent as `%3A`) is
/// signed as `%253A`.
pub fn canonical_uri(path: &str) -> String {
    if path.is_empty() {
        return "/".to_owned();
    }
    path.split('/')
        .map(uri_encode)
        .collect::<Vec<_>>()
        .join("/")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(data);
            mac.finalize().into_bytes().into()
        }
        Err(_) => [0; 32],
    }
}

/// The canonical request and its `SignedHeaders` list.
pub fn canonical_request(req: &Canonical<'_>) -> (String, String) {
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(name, value)| {
            let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
            (name.to_ascii_lowercase(), value)
        })
        .collect();
    headers.sort();
    let canonical_headers: String = headers
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect();
    let signed = headers
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed}\n{}",
        req.method,
        req.uri,
        req.query,
        sha256_hex(req.payload)
    );
    (canonical, signed)
}

/// `<date>/<region>/<service>/aws4_request`.
pub fn credential_scope(amz_date: &str, region: &str, service: &str) -> String {
    let date = amz_date.get(..8).unwrap_or(amz_date);
    format!("{date}/{region}/{service}/aws4_request")
}

pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    )
}

pub fn signing_key(secret: &str, amz_date: &str, region: &str, service: &str) -> [u8; 32] {
    let date = amz_date.get(..8).unwrap_or(amz_date);
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    hmac(&k_service, b"aws4_request")
}

/// The `Authorization` header value for `req`, signed at `amz_date`.
pub fn authorization(
    credentials: &Credentials,
    region: &str,
    service: &str,
    amz_date: &str,
    req: &Canonical<'_>,
) -> String {
    let (canonical, signed_headers) = canonical_request(req);
    let scope = credential_scope(amz_date, region, service);
    let to_sign = string_to_sign(amz_date, &scope, &canonical);
    let key = signing_key(&credentials.secret_access_key, amz_date, region, service);
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    format!(
        "{ALGORITHM} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        credentials.access_key_id
    )
}

/// Signs `http` (an absolute URL without a query) at `unix_secs`: adds `x-amz-date`,
/// `x-amz-security-token` for temporary credentials, and `authorization`. The signature covers
/// every header already set, and `host`, which the host adds itself from the URL.
pub fn sign(
    http: &mut HttpRequest,
    credentials: &Credentials,
    region: &str,
    service: &str,
    unix_secs: u64,
) {
    let date = amz_date(unix_secs);
    http.set_header("x-amz-date", date.as_str());
    if let Some(token) = &credentials.session_token {
        http.set_header("x-amz-security-token", token.as_str());
    }
    let rest = http.url.split_once("://").map_or("", |(_, rest)| rest);
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    // The default port is left out of the `Host` header HTTP clients send.
    let host = authority
        .strip_suffix(":443")
        .filter(|_| http.url.starts_with("https://"))
        .or_else(|| {
            authority
                .strip_suffix(":80")
                .filter(|_| http.url.starts_with("http://"))
        })
        .unwrap_or(authority);
    let mut headers = http.headers.clone();
    headers.push(("host".to_owned(), host.to_owned()));
    let uri = canonical_uri(path);
    let canonical = Canonical {
        method: &http.method,
        uri: &uri,
        query: "",
        headers: &headers,
        payload: &http.body,
    };
    let value = authorization(credentials, region, service, &date, &canonical);
    http.set_header("authorization", value);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of AWS's SigV4 documentation: IAM `ListUsers` signed with the example
    /// credentials at 2015-08-30T12:36:00Z in us-east-1. Expected values from
    /// <https://docs.aws.amazon.com/general/latest/gr/sigv4-create-canonical-request.html>,
    /// <https://docs.aws.amazon.com/general/latest/gr/sigv4-create-string-to-sign.html>,
    /// <https://docs.aws.amazon.com/general/latest/gr/sigv4-calculate-signature.html> and
    /// <https://docs.aws.amazon.com/general/latest/gr/sigv4-add-signature-to-request.html>.
    #[test]
    fn aws_documentation_example() {
        let credentials = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        // 2015-08-30T12:36:00Z
        let date = amz_date(1_440_938_160);
        assert_eq!(date, "20150830T123600Z");
        let headers = [
            (
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded; charset=utf-8".to_owned(),
            ),
            ("Host".to_owned(), "iam.amazonaws.com".to_owned()),
            ("X-Amz-Date".to_owned(), date.clone()),
        ];
        let req = Canonical {
            method: "GET",
            uri: &canonical_uri("/"),
            query: "Action=ListUsers&Version=2010-05-08",
            headers: &headers,
            payload: b"",
        };
        let (canonical, signed) = canonical_request(&req);
        assert_eq!(
            canonical,
            "GET\n/\nAction=ListUsers&Version=2010-05-08\n\
             content-type:application/x-www-form-urlencoded; charset=utf-8\n\
             host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n\
             content-type;host;x-amz-date\n\
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(signed, "content-type;host;x-amz-date");
        assert_eq!(
            sha256_hex(canonical.as_bytes()),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
        );
        let scope = credential_scope(&date, "us-east-1", "iam");
        assert_eq!(scope, "20150830/us-east-1/iam/aws4_request");
        assert_eq!(
            string_to_sign(&date, &scope, &canonical),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\n\
             f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
        );
        let key = signing_key(&credentials.secret_access_key, &date, "us-east-1", "iam");
        assert_eq!(
            hex(&key),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        assert_eq!(
            authorization(&credentials, "us-east-1", "iam", &date, &req),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    #[test]
    fn dates_across_leap_years() {
        assert_eq!(amz_date(0), "19700101T000000Z");
        // 2024-02-29T23:59:59Z
        assert_eq!(amz_date(1_709_251_199), "20240229T235959Z");
        // 2000-03-01T00:00:00Z
        assert_eq!(amz_date(951_868_800), "20000301T000000Z");
    }

    #[test]
    fn paths_are_encoded_twice() {
        assert_eq!(
            canonical_uri("/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"),
            "/model/anthropic.claude-3-haiku-20240307-v1%253A0/converse"
        );
        assert_eq!(uri_encode("a:b/c d"), "a%3Ab%2Fc%20d");
    }

    #[test]
    fn sign_covers_host_date_and_token() {
        let credentials = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "secret".into(),
            session_token: Some("token".into()),
        };
        let mut http = HttpRequest::post_json("https://example.com:443/model/m/converse", "{}");
        sign(
            &mut http,
            &credentials,
            "us-east-1",
            "bedrock",
            1_440_938_160,
        );
        let auth = http
            .headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .map(|(_, v)| v.as_str())
            .unwrap();
        assert!(auth.contains(
            "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        ));
        assert!(auth.contains("Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request"));
        assert!(!format!("{credentials:?}").contains("secret\""));
    }
}

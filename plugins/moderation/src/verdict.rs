//! Reading a moderation service's answer: which categories are over their thresholds (or
//! flagged by the service itself), in either of the two shapes the guard speaks. A webhook's
//! category without a threshold counts as flagged at a score of 0.5 or more.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::{ConsultReply, Finding};

use super::{Format, Options, count};

/// The categories that are over, by name.
pub struct Flagged(Vec<String>);

impl Flagged {
    /// One finding per category, its name made a short kind (`harassment/threatening` becomes
    /// `harassment-threatening`).
    pub fn findings(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        for category in &self.0 {
            let kind: String = category
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .take(32)
                .collect();
            count(&mut findings, &kind);
        }
        findings
    }
}

/// One result of OpenAI's `/v1/moderations`.
#[derive(Deserialize)]
struct OpenAiResult {
    #[serde(default)]
    flagged: bool,
    #[serde(default)]
    categories: BTreeMap<String, Option<bool>>,
    #[serde(default)]
    category_scores: BTreeMap<String, Option<f64>>,
}

#[derive(Deserialize)]
struct OpenAiAnswer {
    results: Vec<OpenAiResult>,
}

/// The webhook's answer.
#[derive(Deserialize)]
struct WebhookAnswer {
    #[serde(default)]
    flagged: bool,
    #[serde(default)]
    categories: BTreeMap<String, f64>,
}

/// What the reply says: the categories over, `None` when nothing is (or the call failed and
/// the entry let it through), or why it cannot be read.
pub fn read(options: &Options, reply: &ConsultReply) -> Result<Option<Flagged>, String> {
    let body = match reply {
        ConsultReply::Answered((_, body)) => body,
        // The host calls with a failure only when the entry says a failure lets it through.
        ConsultReply::Failed(_) => return Ok(None),
    };
    let mut over = Vec::new();
    let mut flagged = false;
    match options.format {
        Format::Openai => {
            let answer: OpenAiAnswer =
                serde_json::from_str(body).map_err(|_| "not a moderation result".to_owned())?;
            for result in answer.results {
                flagged |= result.flagged;
                let scores = result.category_scores.iter().map(|(k, v)| (k, *v));
                let flags = result
                    .categories
                    .iter()
                    .filter_map(|(k, v)| Some((k, (*v)?)));
                judge(options, scores, flags, &mut over);
            }
        }
        Format::Webhook => {
            let answer: WebhookAnswer =
                serde_json::from_str(body).map_err(|_| "not a webhook verdict".to_owned())?;
            flagged = answer.flagged;
            let scores = answer.categories.iter().map(|(k, v)| (k, Some(*v)));
            judge(options, scores, std::iter::empty(), &mut over);
            // A score at or above 0.5 is the webhook's own flag for categories without a
            // threshold.
            if !options.only_thresholds {
                for (name, score) in &answer.categories {
                    if !options.thresholds.contains_key(name) && *score >= 0.5 {
                        push(&mut over, name);
                    }
                }
            }
        }
    }
    if over.is_empty() && flagged && !options.only_thresholds && options.thresholds.is_empty() {
        over.push("flagged".to_owned());
    }
    Ok((!over.is_empty()).then_some(Flagged(over)))
}

/// Adds to `over` each category whose score reaches its threshold, and (unless only the
/// thresholds count) each the service flagged that has no threshold.
fn judge<'a>(
    options: &Options,
    scores: impl Iterator<Item = (&'a String, Option<f64>)>,
    flags: impl Iterator<Item = (&'a String, bool)>,
    over: &mut Vec<String>,
) {
    for (name, score) in scores {
        if let (Some(threshold), Some(score)) = (options.thresholds.get(name), score)
            && score >= *threshold
        {
            push(over, name);
        }
    }
    if options.only_thresholds {
        return;
    }
    for (name, flag) in flags {
        if flag && !options.thresholds.contains_key(name) {
            push(over, name);
        }
    }
}

fn push(over: &mut Vec<String>, name: &str) {
    if !over.iter().any(|o| o == name) {
        over.push(name.to_owned());
    }
}

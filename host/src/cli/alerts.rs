//! `wasmgate alerts test`: a test alert sent to every sink of the config, to check each is
//! reachable and reads the format (nothing is recorded in the ledger).

use std::io::Write;

use crate::alerts::deliver::deliver;
use crate::config::Config;
use crate::ledger::alerts::Fired;
use crate::ledger::time::now_us;

/// Sends the test alert to each sink; prints each outcome. `Ok(false)` if any sink failed.
pub async fn test(config: &Config, out: &mut dyn Write) -> anyhow::Result<bool> {
    let sinks = &config.alerts.sinks;
    if sinks.is_empty() {
        anyhow::bail!("the config has no alerts.sinks to test");
    }
    let http = crate::upstream::client()?;
    let now = now_us();
    let fired = Fired {
        rule: "test".to_owned(),
        subject: "wasmgate".to_owned(),
        threshold: 0,
        period_us: now,
        fired_us: now,
        message: "a test alert from `wasmgate alerts test`".to_owned(),
    };
    let mut all = true;
    for sink in sinks {
        let delivery = deliver(&http, sink, &fired).await;
        match delivery.delivered_us {
            Some(_) => writeln!(
                out,
                "{}: delivered ({} attempts)",
                sink.name, delivery.attempts
            )?,
            None => {
                all = false;
                writeln!(
                    out,
                    "{}: not delivered after {} attempts: {}",
                    sink.name,
                    delivery.attempts,
                    delivery.last_error.unwrap_or_default()
                )?;
            }
        }
    }
    Ok(all)
}

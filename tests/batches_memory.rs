//! A 200 MB file through the gateway with flat memory: uploaded with the official `openai`
//! Python SDK and downloaded back, against the real binary (a child process, so that its peak
//! RSS is its own). The gateway spools the upload to disk and streams it on; the download is
//! streamed from the upstream as it arrives. Its peak RSS after 200 MB must stay within a small
//! margin of its peak after a file of 4 MB.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::common;
use crate::sdk_clients::{assert_passed, run_client};
use common::binary::{Gateway, temp_dir};
use common::gateway::{Gateway as Config, Provider};
use common::mock_batches::{API_KEY, MockBatches};

/// Peak RSS (`VmHWM`) of process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Writes `mib` MiB of varied bytes to `path`; returns their SHA-256.
fn write_file(path: &Path, mib: usize) -> String {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut hash = Sha256::new();
    let mut block = vec![0u8; 1 << 20];
    for i in 0..mib {
        for (j, b) in block.iter_mut().enumerate() {
            *b = (i.wrapping_mul(31) ^ j.wrapping_mul(7)) as u8;
        }
        hash.update(&block);
        file.write_all(&block).unwrap();
    }
    file.flush().unwrap();
    hex::encode(hash.finalize())
}

/// Runs a fresh gateway, sends `mib` MiB through it and back; its peak RSS in KiB.
async fn peak_after(mock: &MockBatches, dir: &Path, mib: usize) -> u64 {
    let config = dir.join("config.yaml");
    let openai = Provider::at("openai", &mock.openai_url(), API_KEY)
        .options("{ batches: true }")
        .models(["gpt-4o"]);
    let ledger = format!(
        "sqlite://{}",
        dir.join(format!("ledger-{mib}.db")).display()
    );
    let yaml = Config::builder()
        .any_port()
        .ledger(&ledger)
        .set("batches.spool_dir", dir.display().to_string())
        .provider("openai", openai)
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    let path = dir.join(format!("file-{mib}.bin"));
    let sha = write_file(&path, mib);
    let gateway = Gateway::serve(dir, &config).await;
    let output = run_client(
        "openai_batches.py",
        &gateway.url("/v1"),
        "sk-anyone",
        &["--scenario", "big", "--file", path.to_str().unwrap()],
    )
    .await;
    assert_passed(&output, &["big"]);
    let peak = peak_rss_kib(gateway.pid());
    drop(gateway);
    // What went upstream and what came back are the client's bytes.
    let upstream = mock
        .files()
        .await
        .into_iter()
        .rfind(|f| f.bytes == (mib as u64) << 20)
        .unwrap();
    assert_eq!(upstream.sha256, sha, "the upstream got the file whole");
    let back = std::fs::read(dir.join(format!("file-{mib}.bin.back"))).unwrap();
    assert_eq!(hex::encode(Sha256::digest(&back)), sha, "the download");
    drop(back);
    // Nothing is left in the spool.
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("wasmgate-upload-")
        })
        .collect();
    assert!(left.is_empty(), "spooled files left: {left:?}");
    for f in [path.clone(), dir.join(format!("file-{mib}.bin.back"))] {
        let _ = std::fs::remove_file(f);
    }
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mb_file_goes_through_and_back_with_flat_memory() {
    let mock = MockBatches::start().await;
    let dir = temp_dir("batches-memory");
    // The first start may compile the plugins into the component cache, which costs memory of
    // its own: it is not measured.
    peak_after(&mock, &dir, 4).await;
    let small = peak_after(&mock, &dir, 4).await;
    let large = peak_after(&mock, &dir, 200).await;
    eprintln!(
        "gateway peak RSS: {} MiB after 4 MiB, {} MiB after 200 MiB",
        small / 1024,
        large / 1024
    );
    assert!(
        large < small + 48 * 1024,
        "peak RSS grew from {small} KiB to {large} KiB with the file"
    );
    let _ = std::fs::remove_dir_all(dir);
}

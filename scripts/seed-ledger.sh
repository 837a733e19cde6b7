#!/usr/bin/env bash
# Fills a ledger with N usage records that look like a busy gateway's last 30 days, for measuring
# the request path against a full ledger (issue 38 item 6, BENCHMARKS.md):
#
#   scripts/seed-ledger.sh WASMGATE sqlite:///path/ledger.db 10000000
#   scripts/seed-ledger.sh WASMGATE postgres://user@127.0.0.1:PORT/db 10000000
#
# WASMGATE is the gateway binary: `keys list --ledger URL` creates the schema by the ledger's own
# migrations, so the records land in the real tables with the real indexes. The records are made
# in SQL (SQLite's recursive CTE, PostgreSQL's generate_series), in time order as the gateway
# writes them, with UUIDv7 request ids as it makes them: 8 projects, 400 users and 40 keys spread
# over them, 6 models of 3 providers, 2 % failures, half of them streamed (a ttft), tokens and
# cost that vary. usage_users and the rollups (hourly and daily, per model and per user, and the
# duration histograms) are filled from the records, so that every table a write touches is as
# large as N records make it. The indexes stay during the insert: records in time order append
# to each of them (dropping them and sorting 10 million keys afterwards took far longer).
# SQLite's file is written without a rollback journal or WAL (a failed seed leaves a file to
# delete; the gateway puts it back in WAL mode), so that the disk holds one copy of the records,
# not two until a checkpoint. Bounded: N records, one transaction per step. Disk: about 470 bytes
# per record in SQLite.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 WASMGATE LEDGER_URL RECORDS" >&2; exit 2; }
gateway=$1 url=$2 n=$3
[[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || { echo "RECORDS must be a positive number" >&2; exit 2; }
"$gateway" keys list --ledger "$url" >/dev/null

now_us=$(($(date +%s) * 1000000))
span_us=$((30 * 86400 * 1000000))
start_us=$((now_us - span_us))
# The last record a minute before now: the gateway's own records come after every seeded one.
step_us=$(((span_us - 60000000) / n))
hour_us=3600000000
day_us=86400000000

projects="CASE u % 8 WHEN 0 THEN 'default' WHEN 1 THEN 'bench' ELSE 'team-' || (u % 8) END"
# The values of one record from its number i, in SQL both databases read alike: h and g are two
# multiplicative hashes of i (32 bits each), u the user (0..399), m the model (0..5).
values="
  r AS (
    SELECT i, $start_us + i * $step_us AS t,
      (i * 2654435761 + 12345) % 4294967296 AS h, ((i + 7) * 2246822519) % 4294967296 AS g
    FROM seq),
  v AS (
    SELECT i, t, h, g, h % 400 AS u, (h / 512) % 6 AS m,
      200 + (h / 8) % 3000 AS inp, 50 + (g / 32) % 800 AS outp,
      CASE WHEN (g / 2048) % 50 = 0 THEN 429 + (g % 2) * 71 ELSE 200 END AS st,
      300000 + (g / 128) % 5000000 AS lat, (g / 8) % 2 AS streamed
    FROM r)
  SELECT
    UUID_EXPR AS request_id, t AS time_us,
    ($projects) AS project, 'key_' || (u % 40) AS api_key_id, u + 1 AS user_key,
    'user-' || u AS user_id, 'User ' || u AS user_name, '[]' AS user_tags,
    CASE WHEN m < 3 THEN 'openai' WHEN m < 5 THEN 'anthropic' ELSE 'gemini' END AS provider,
    CASE m WHEN 0 THEN 'gpt-4o-mini' WHEN 1 THEN 'gpt-4o' WHEN 2 THEN 'gpt-4.1'
      WHEN 3 THEN 'claude-sonnet-4-5' WHEN 4 THEN 'claude-haiku-4-5' ELSE 'gemini-2.5-flash' END
      AS model,
    'chat.completions' AS operation,
    inp AS input_tokens, CASE WHEN st = 200 THEN outp ELSE 0 END AS output_tokens,
    CASE WHEN h % 4 = 0 THEN inp / 2 ELSE 0 END AS cached_input_tokens,
    CASE WHEN st = 200 THEN (inp * (150 + m * 400) + outp * (600 + m * 1600)) / 1000 ELSE 0 END
      AS cost_micros,
    lat AS latency_us, st AS status,
    CASE st WHEN 429 THEN 'rate_limited' WHEN 500 THEN 'upstream_error' ELSE NULL END AS error_type,
    1 = 0 AS estimated, CASE WHEN streamed = 1 AND st = 200 THEN lat / 5 ELSE NULL END AS ttft_us,
    inp * 4 + 300 AS bytes_in, outp * 4 + 200 AS bytes_out
  FROM v"
columns="request_id, time_us, project, api_key_id, user_key, user_id, user_name, user_tags,
  provider, model, operation, input_tokens, output_tokens, cached_input_tokens, cost_micros,
  latency_us, status, error_type, estimated, ttft_us, bytes_in, bytes_out"

sums="input_tokens, output_tokens, cost_micros, requests, errors, cached_input_tokens, latency_us,
  ttft_us, ttft_count"
summed=$(echo "$sums" | sed -E 's/([a-z_]+)/SUM(\1)/g')
# The hourly rows per user from the records (the SUM_COLUMNS of ledger::rollup; no cache hits or
# batches among the seeded records); every other rollup from a finer one, each one GROUP BY over
# far fewer rows than the records.
rollups="INSERT INTO usage_hourly_users (project, hour_us, user_key, provider, model, $sums)
    SELECT project, (time_us / $hour_us) * $hour_us, user_key, provider, model, SUM(input_tokens),
      SUM(output_tokens), SUM(COALESCE(cost_micros, 0)), COUNT(*),
      SUM(CASE WHEN status < 200 OR status >= 300 THEN 1 ELSE 0 END), SUM(cached_input_tokens),
      SUM(latency_us), SUM(COALESCE(ttft_us, 0)), COUNT(ttft_us)
    FROM usage_records GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO usage_daily_users (project, day_us, user_key, provider, model, $sums)
    SELECT project, (hour_us / $day_us) * $day_us, user_key, provider, model, $summed
    FROM usage_hourly_users GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO usage_hourly_models (project, hour_us, provider, model, $sums)
    SELECT project, hour_us, provider, model, $summed
    FROM usage_hourly_users GROUP BY 1, 2, 3, 4;
  INSERT INTO usage_daily_models (project, day_us, provider, model, $sums)
    SELECT project, day_us, provider, model, $summed
    FROM usage_daily_users GROUP BY 1, 2, 3, 4;"
# The duration histograms (ledger::histogram::bucket: exact below 32, then 16 buckets for each
# power of two), hourly from the records and daily from the hourly; $1 is the SQL for
# floor(log2(v)).
durations() { # log2
  local bucket="CASE WHEN v < 32 THEN v ELSE 16 * ($1 - 4) + v / CAST(POWER(2, $1 - 4) AS BIGINT) END"
  echo "INSERT INTO usage_hourly_latency (project, hour_us, metric, bucket, records)
      SELECT project, at, metric, b, COUNT(*) FROM (
        SELECT project, at, metric, $bucket AS b FROM (
          SELECT project, (time_us / $hour_us) * $hour_us AS at, 0 AS metric, latency_us AS v
          FROM usage_records
          UNION ALL
          SELECT project, (time_us / $hour_us) * $hour_us, 1, ttft_us FROM usage_records
          WHERE ttft_us IS NOT NULL
        ) AS d) AS e
      GROUP BY 1, 2, 3, 4;
    INSERT INTO usage_daily_latency (project, day_us, metric, bucket, records)
      SELECT project, (hour_us / $day_us) * $day_us, metric, bucket, SUM(records)
      FROM usage_hourly_latency GROUP BY 1, 2, 3, 4;"
}
users="INSERT INTO usage_users (user_key, project, user_id, user_name, user_tags)
  SELECT u + 1, $projects, 'user-' || u, 'User ' || u, '[]' FROM users"

started=$(date +%s)
case $url in
  sqlite://*)
    uuid="printf('%08x-%04x-7%03x-%04x-%012x', (t / 1000) / 65536, (t / 1000) % 65536, h % 4096,
      32768 + g % 16384, (h * 65536 + g) % 281474976710656)"
    select=${values/UUID_EXPR/$uuid}
    sqlite3 "${url#sqlite://}" <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -1048576;
PRAGMA temp_store = MEMORY;
BEGIN;
INSERT INTO usage_records ($columns)
WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < $n - 1),
$select;
WITH RECURSIVE users(u) AS (SELECT 0 UNION ALL SELECT u + 1 FROM users WHERE u < 399) $users;
$rollups
$(durations "CAST(LOG2(v) AS INTEGER)")
COMMIT;
ANALYZE;
PRAGMA journal_mode = WAL;
SQL
    ;;
  postgres://* | postgresql://*)
    uuid="lpad(to_hex((t / 1000) / 65536), 8, '0') || '-' || lpad(to_hex((t / 1000) % 65536), 4, '0')
      || '-7' || lpad(to_hex(h % 4096), 3, '0') || '-' || to_hex(32768 + g % 16384) || '-'
      || lpad(to_hex((h * 65536 + g) % 281474976710656), 12, '0')"
    select=${values/UUID_EXPR/$uuid}
    psql -q -v ON_ERROR_STOP=1 "$url" <<SQL
SET synchronous_commit = off;
SET work_mem = '256MB';
BEGIN;
INSERT INTO usage_records ($columns)
WITH seq AS (SELECT i::bigint AS i FROM generate_series(0, $n - 1) AS i),
$select;
WITH users AS (SELECT u::bigint AS u FROM generate_series(0, 399) AS u) $users;
$rollups
$(durations "(floor(log(2, v::numeric)))::int")
COMMIT;
VACUUM ANALYZE;
SQL
    ;;
  *) echo "unknown ledger URL $url (sqlite:// or postgres://)" >&2; exit 2 ;;
esac
echo "seeded $n records in $(($(date +%s) - started)) s" >&2

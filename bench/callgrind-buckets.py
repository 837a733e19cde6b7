#!/usr/bin/env python3
"""Buckets a callgrind profile's self cost (instructions) by function name, per request.

callgrind-buckets.py <callgrind.out file> <requests> [-b BUCKET]   (-b: that bucket's functions)

Self cost, not inclusive: wasmtime's fibers and the async runtime make inclusive costs
meaningless (a fiber switch charges its caller with everything run in between). A function
goes to the first bucket whose pattern matches its name; "other functions" holds what none
did (SQLite's internals without a prefix, std, fmt).
"""
import re,subprocess,sys,collections
out=subprocess.run(["callgrind_annotate","--auto=no","--threshold=100",sys.argv[1]],capture_output=True,text=True).stdout
n=int(sys.argv[2])
B=[
 ('wasm guest code (JIT)', r'^\?\?\?:0x'),
 ('sqlite', r'sqlite3|rusqlite|wal[A-Z]|vdbe|btree|pager|pcache|Vdbe|Btree|Pager'),
 ('tokenizer', r'tokenizer|regex|aho_corasick'),
 ('wasm pool reset/instantiate', r'pagemap|allocator::pooling|InstancePre|instantiat|initialize_and_return_funcref|lookup_vmdef|get_func_ref|vm::instance|deallocate|module_artifacts|func_loc|Imports|component::instance|vmctx|VMComponentContext|StoreOpaque|store::'),
 ('wasm calls/lift/lower', r'wasmtime|typecheck|cranelift|fiber'),
 ('wasi ctx', r'wasmtime_wasi|cap_rand|cap_std|rand_chacha|rand::'),
 ('json', r'serde_json|raw_json|serde::'),
 ('url', r'url::|idna'),
 ('hashing', r'sip::|DefaultHasher|hash::|sha2|crc32|ahash|foldhash|hashbrown'),
 ('memcpy/memset/memcmp', r'memmove|memcpy|memset|memcmp|strlen'),
 ('alloc', r'mi_|malloc|free|_mi_|alloc::raw_vec|RawVec'),
 ('tracing/metrics/telemetry', r'tracing|metrics|telemetry|opentelemetry'),
 ('reqwest/hyper client', r'reqwest|hyper_util::client|hyper::client'),
 ('hyper/http/axum server', r'hyper|http::|axum|tower|httparse|h2::'),
 ('tokio', r'tokio|mio::|parking_lot|futures'),
 ('ledger/journal', r'ledger|journal'),
 ('pipeline', r'wasmgate::pipeline'),
  ('libc/kernel-side', r'libc\.so|ld-linux'),
]
c=collections.Counter(); tot=0; other=collections.Counter()
for line in out.splitlines():
    m=re.match(r'^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$',line)
    if not m or 'PROGRAM TOTALS' in line: continue
    v=int(m.group(1).replace(',','')); name=m.group(2); tot+=v
    for b,p in B:
        if re.search(p,name): c[b]+=v; break
    else: c['other functions']+=v; other[name]+=v
print(f"total {tot/n:,.0f} instructions per request")
for k,v in c.most_common(): print(f"{100*v/tot:5.1f}%  {v/n:9,.0f}/req  {k}")
if '-b' in sys.argv:
    want=sys.argv[sys.argv.index('-b')+1]
    per=collections.Counter()
    for line in out.splitlines():
        m=re.match(r'^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$',line)
        if not m or 'PROGRAM TOTALS' in line: continue
        v=int(m.group(1).replace(',','')); name=m.group(2)
        for b,p in B:
            if re.search(p,name):
                if b==want: per[name]+=v
                break
    for k,v in per.most_common(25): print(f"  {v/n:8,.0f} {re.sub(r'/root/.cargo/registry/src/[^/]*/','',k)[:170]}")

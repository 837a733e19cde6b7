#!/usr/bin/env python3
"""Buckets a `perf script` dump of the gateway by the first matching frame (priority order).

perf record -e cpu-clock -F 2000 --call-graph fp -p $(pgrep -f "wasmgate serve") -o g.data -- sleep 6
perf script -i g.data > g.txt && bench/perf-buckets.py g.txt
"""
import re,collections,sys
stacks=[];cur=[]
for line in open(sys.argv[1]):
    line=line.rstrip('\n')
    if not line.strip():
        if cur: stacks.append(cur); cur=[]
        continue
    if line[0] not in ' \t':
        cur=[line.split()[0]]; continue
    parts=line.strip().split(' ',1)
    if len(parts)==2:
        sym=re.sub(r'\+0x[0-9a-f]+ \(.*\)$','',parts[1]); sym=re.sub(r' \(.*\)$','',sym); cur.append(sym)
N=len(stacks)
# buckets: checked leaf->root; first bucket whose pattern matches any frame (priority order)
B=[
 ('sqlite', r'sqlite3|rusqlite'),
 ('tokenizer', r'tiktoken|fancy_regex|Tokenizer::count'),
 ('wasm instantiate', r'instantiate_async|InstancePre|GuestIndices|_::<>::load'),
 ('wasm pool reset (ioctl)', r'__x64_sys_ioctl|rustix::ioctl'),
 ('wasm calls', r'TypedFunc<>::call_impl|Func::call_raw|wasm\[0\]'),
 ('net send', r'tcp_sendmsg|__x64_sys_writev|__x64_sys_sendto'),
 ('net recv', r'tcp_recvmsg|__x64_sys_recvfrom|__x64_sys_read'),
 ('epoll/sched', r'^do_epoll_wait|^__x64_sys_epoll|^__schedule|^__x64_sys_futex|^__x64_sys_clock_nanosleep'),
 ('telemetry', r'telemetry|tracing'),
 ('ledger queue', r'ledger::'),
 ('request parse/validate', r'ClientRequest::parse|raw_json|validate_chat|body::read'),
 ('upstream guard', r'upstream::guard'),
 ('reqwest/hyper client', r'reqwest|hyper::client|hyper_util::client'),
 ('pipeline other', r'wasmgate::pipeline'),
 ('server other', r'wasmgate::server|axum|tower'),
 ('hyper server', r'hyper::proto|hyper::server'),
 ('alloc', r'mi_|malloc|free'),
 ('tokio', r'tokio::'),
]
c=collections.Counter()
for s in stacks:
    for name,pat in B:
        if any(re.search(pat,f) for f in s[1:]):
            c[name]+=1; break
    else: c['other:'+s[0]]+=1
for k,v in c.most_common(): print(f"{100*v/N:5.1f}% {k}")

#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) and their
SOURCES.md from tests/fixtures/machines, tests/data/fixtures (the captures copied from real machines), profiles/ and the API tests'
request bodies. Run from anywhere after `make` (the hardware_input seeds are scans of fixture
machines by build/rigfit): python3 tests/fuzz/tools/seeds.py. It overwrites the files it
writes and leaves any other file (inputs kept from findings) in place."""
import os, re, json, glob, hashlib, struct, subprocess
def rglob(base, name):
    out=[]
    for dp, dn, fn in os.walk(base):
        if name in fn: out.append(dp+'/'+name)
    return sorted(out)
R=os.path.abspath(os.path.join(os.path.dirname(__file__),'../../..')); S=os.path.join(R,'tests','data','fixtures'); M=R+'/tests/fixtures/machines'
C=R+'/tests/fuzz/corpus'
src={}  # target -> list of (name, source)
def put(t, name, data, source):
    d=f'{C}/{t}'; os.makedirs(d, exist_ok=True)
    if isinstance(data,str): data=data.encode()
    open(f'{d}/{name}','wb').write(data)
    src.setdefault(t,[]).append((name,source))
def rd(p): return open(p,'rb').read()
def short(p): return os.path.relpath(p, R)
SEP=b'\n##\n'
# meminfo
seen=set()
for p in sorted(glob.glob(M+'/*/proc/meminfo'))+sorted(glob.glob(S+'/*proc-meminfo*')):
    b=rd(p); h=hashlib.sha1(b).hexdigest()
    if h in seen: continue
    seen.add(h)
    n=p.split('/machines/')[1].split('/')[0] if '/machines/' in p else os.path.basename(p).split('__')[0]
    put('meminfo', n, b, short(p))
# cpuinfo
seen=set()
for p in sorted(glob.glob(M+'/*/proc/cpuinfo'))+sorted(glob.glob(S+'/*proc-cpuinfo*')):
    b=rd(p)[:16384]; h=hashlib.sha1(b).hexdigest()
    if h in seen: continue
    seen.add(h)
    n=p.split('/machines/')[1].split('/')[0] if '/machines/' in p else os.path.basename(p).split('__')[0]
    put('cpuinfo', n, b, short(p)+(' (first 16 KiB)' if len(rd(p))>16384 else ''))
# nvidia-smi
for p in sorted(glob.glob(M+'/*/nvidia-smi-query-gpu.csv')):
    n=p.split('/machines/')[1].split('/')[0]
    put('nvidia_smi', n+'.csv', b'\x00'+rd(p), short(p)+' (first byte 0: the full query)')
for p in sorted(glob.glob(S+'/*query-gpu*.csv'))[:4]+sorted(glob.glob(S+'/*nvidia-smi-L.txt'))[:5]:
    put('nvidia_smi', os.path.basename(p).split('__')[0]+('.L' if p.endswith('-L.txt') else '.csv'), b'\x00'+rd(p), short(p))
put('nvidia_smi','nvml-record', b'\x00'+b'''rigfit-nvml 1
driver_version=565.57.01
cuda_version=12070
count=2
gpu=0
name=NVIDIA H100 80GB HBM3
uuid=GPU-00000000-0000-0000-0000-000000000000
pci_bus_id=00000000:18:00.0
pci_device_id=590418142
memory_total=85520809984
memory_free=84000000000
memory_used=1520809984
compute_capability=9.0
memory_bus_width=5120
max_memory_clock=2619
mig_mode=1
mig_instances=4
gpu=1
handle_error=999
end
''', 'written from the record format in core/hw/hw_parse_nvidia.h')
put('nvidia_smi','nvml-dlopen', b'\x00rigfit-nvml 1\ndlopen_error=libnvidia-ml.so.1: cannot open shared object file\nend\n', 'core/hw/hw_parse_nvidia.h format')
# sysctl
for p in sorted(glob.glob(M+'/*/sysctl-a.txt'))+sorted(glob.glob(S+'/*sysctl*')):
    n=p.split('/machines/')[1].split('/')[0] if '/machines/' in p else os.path.basename(p).split('__')[0]
    put('sysctl', n, rd(p)[:32768], short(p))
# tegra
for d in sorted(glob.glob(M+'/*')):
    parts=[]
    for rel in ['sys/firmware/devicetree/base/model','sys/firmware/devicetree/base/compatible','etc/nv_tegra_release']:
        alt=d+'/proc/device-tree/'+rel.split('/')[-1]
        p=d+'/'+rel
        parts.append(rd(p) if os.path.exists(p) else rd(alt) if os.path.exists(alt) else b'')
    if any(parts):
        put('tegra', os.path.basename(d), SEP.join(parts), short(d)+': devicetree model, compatible, etc/nv_tegra_release')
for p in sorted(glob.glob(S+'/*device-tree*'))+sorted(glob.glob(S+'/*nv_tegra_release*')):
    b=rd(p)
    put('tegra', os.path.basename(p).split('__')[0]+'-'+('compat' if 'compat' in p else 'model' if 'model' in p else 'release'),
        (SEP+b if 'compat' in p else b if 'model' in p else SEP+SEP+b), short(p))
# cgroup
for d in sorted(glob.glob(M+'/container-*')):
    def f(rel):
        p=d+'/'+rel
        return rd(p) if os.path.exists(p) else b''
    cg=f('proc/self/cgroup'); mi=f('proc/self/mountinfo')
    files=[]
    for rel in ['memory.max','memory.current','memory.stat','cpu.max','cpu.cfs_quota_us','cpu.cfs_period_us']:
        hits=rglob(d+'/sys/fs/cgroup',rel)
        if rel=='memory.max' and not hits: hits=rglob(d+'/sys/fs/cgroup','memory.limit_in_bytes')
        if rel=='memory.current' and not hits: hits=rglob(d+'/sys/fs/cgroup','memory.usage_in_bytes')
        files.append(rd(hits[0]) if hits else b'')
    put('cgroup', os.path.basename(d), SEP.join([cg,mi]+files), short(d)+': proc/self/cgroup, mountinfo, sys/fs/cgroup files')
put('cgroup','v2-host', SEP.join([b'0::/init.scope\n', b'30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n', b'max\n', b'123456789\n', b'', b'max 100000\n', b'-1\n', b'100000\n']), 'written: a v2 host without limits')
# amd
for d in sorted(glob.glob(M+'/*')):
    cards=rglob(d+'/sys','mem_info_vram_total')+rglob(d+'/sys','lmem_total_bytes')
    for i,vt in enumerate(cards[:2]):
        dev=os.path.dirname(vt)
        def f(n):
            p=dev+'/'+n
            return rd(p) if os.path.exists(p) else b''
        kfd=sorted(glob.glob(d+'/sys/class/kfd/kfd/topology/nodes/*/properties'))
        kp=rd(kfd[min(i+1,len(kfd)-1)]) if kfd else b''
        put('amd', f'{os.path.basename(d)}-{i}', SEP.join([f('vendor'),f('device'),f('uevent'),f('mem_info_vram_total'),f('mem_info_vram_used'),f('mem_info_gtt_total'),f('pp_dpm_mclk'),kp]), short(dev)+' and its KFD node')
# topology
for d in sorted(glob.glob(M+'/*')):
    base=d+'/sys/devices/system/cpu'
    if not os.path.exists(base+'/online'): continue
    parts=[rd(base+'/online').strip()]
    for c in range(16):
        p=f'{base}/cpu{c}/topology/thread_siblings_list'
        if not os.path.exists(p): break
        parts.append(rd(p).strip())
    data=SEP.join(parts)
    if 'arm' in d or 'graviton' in d or 'jetson' in d or 'apple' in d or 'raspberry' in d: data=b'a'+data if not data[:1].isdigit() else data
    put('topology', os.path.basename(d), data, short(base)+': online and cpuN/topology/thread_siblings_list')
put('topology','hybrid', SEP.join([b'0-7',b'0-1',b'0-1',b'2-3',b'2-3',b'4',b'5',b'6',b'7']), 'written: four threads of two P-cores, four E-cores')
# profiles
def sub(doc,key,n):
    d=dict(doc); d[key]=doc[key][:n]; return json.dumps(d,indent=1)
dv=json.load(open(R+'/profiles/devices.json')); mv=json.load(open(R+'/profiles/models.json'))
put('profiles','devices-3', 'd'+sub(dv,'devices',3), 'profiles/devices.json, first 3 entries')
put('profiles','models-3', 'm'+sub(mv,'models',3), 'profiles/models.json, first 3 entries')
put('profiles','tiers', b't'+rd(R+'/profiles/tiers.json'), 'profiles/tiers.json')
# hardware_input: rendered scans of fixture machines
for n in ['nvidia-rtx3060-laptop','nvidia-hgx-h100-8gpu','apple-m3-max-macos15','amd-rx6800xt-plus-raphael-igpu','jetson-orin-nano-devkit-l4t35.3.1','container-docker-cgroup2-4g-2cpu','intel-i7-1165g7-laptop','amd-instinct-mi300a-4apu']:
    out=json.loads(subprocess.run([R+'/build/rigfit','detect','--format','json','--root',M+'/'+n],capture_output=True).stdout)
    # The same bytes on every run: the time and duration of the scan fixed.
    out['scanned_at']='2026-01-01T00:00:00.000Z'; out['scan_duration_ms']=1.5
    out=json.dumps(out,separators=(',',':')).encode()
    put('hardware_input', n+'.json', out, f'rigfit detect --format json --root tests/fixtures/machines/{n}')
put('hardware_input','minimal.json','{"gpus":[{"name":"RTX 3060 12GB"}],"memory":{"total_bytes":34359738368}}','tests/api/test_seed_hardware.c')
# request bodies from the api tests
lit=re.compile(r'"(\{(?:[^"\\]|\\.)*\})"')
for t,key in [('test_estimate','e'),('test_recommend','r'),('test_finetune_detect','f'),('test_validate','v'),('test_runtime_config','c'),('test_seed_hardware','e')]:
    txt=open(f'{R}/tests/api/{t}.c').read()
    k=0
    for m in lit.finditer(txt):
        s=bytes(m.group(1),'utf-8').decode('unicode_escape')
        try: json.loads(s)
        except Exception: continue
        # Recommending hardware estimates every device profile: ~0.5 s in the release build,
        # ~25 s under the fuzz build's instrumentation. Left out so the short pass fuzzes.
        if '"for":"hardware"' in s: continue
        k+=1
        if k>20: break
        put('request', f'{t[5:]}-{k}', key+s, f'tests/api/{t}.c')
for n in ['nvidia-hgx-h100-8gpu','apple-m3-max-macos15','amd-instinct-mi300a-4apu']:
    hw=open(f'{C}/hardware_input/{n}.json','rb').read().strip()
    put('request', f'estimate-hardware-{n}', b'e{"model":"llama-3.1-8b","hardware":'+hw+b'}', f'the hardware_input seed {n}.json in an estimate')
    # A recommendation estimates every catalog model on the hardware: 0.3 s in the release
    # build for the 4-APU machine, 10 s instrumented; one such seed is enough.
    if n.startswith('apple'):
        put('request', f'recommend-hardware-{n}', b'r{"limit":3,"hardware":'+hw+b'}', f'the hardware_input seed {n}.json in a recommendation')
put('request','estimate-typical','e{"model":{"id":"qwen2.5-7b"},"quant":"Q4_K_M"}','make bench body')

# gguf: small GGUF v3 files written here (the shape of tests/core/fit/test_gguf.c's tiny llama)
def gstr(x): x=x.encode(); return struct.pack('<Q',len(x))+x
def gkv(k,t,v):
    b=gstr(k)+struct.pack('<I',t)
    if t==8: b+=gstr(v)
    elif t==4: b+=struct.pack('<I',v)
    elif t==10: b+=struct.pack('<Q',v)
    elif t==6: b+=struct.pack('<f',v)
    elif t==9:
        et,items=v; b+=struct.pack('<IQ',et,len(items))
        for it in items: b+=gstr(it) if et==8 else struct.pack('<i',it)
    return b
def gguf(arch,kvs,tensors,version=3):
    kv=[gkv('general.architecture',8,arch)]+[gkv(*x) for x in kvs]
    hdr=b'GGUF'+struct.pack('<IQQ',version,len(tensors),len(kv))+b''.join(kv)
    off=0; tb=b''; sizes=[]
    for name,dims,typ in tensors:
        n=1
        for d in dims: n*=d
        sz=n*(4 if typ==0 else 2)
        tb+=gstr(name)+struct.pack('<I',len(dims))+b''.join(struct.pack('<Q',d) for d in dims)+struct.pack('<IQ',typ,off)
        off+=(sz+31)//32*32
    h=hdr+tb; pad=(-len(h))%32
    return h+b'\0'*pad+b'\0'*off
llama=[('llama.block_count',4,1),('llama.embedding_length',4,64),('llama.attention.head_count',4,4),
       ('llama.attention.head_count_kv',4,2),('llama.context_length',4,2048),('llama.feed_forward_length',4,128),
       ('general.file_type',4,1),('general.alignment',4,32),('llama.rope.freq_base',6,10000.0),
       ('tokenizer.ggml.tokens',9,(8,['<s>','</s>','a','b'])),('tokenizer.ggml.token_type',9,(5,[1,1,1,1]))]
tens=[('token_embd.weight',[64,4],1),('blk.0.attn_q.weight',[64,64],1),('blk.0.attn_k.weight',[64,32],1),
      ('blk.0.ffn_up.weight',[64,128],1),('output_norm.weight',[64],0)]
put('gguf','llama-tiny.gguf',gguf('llama',llama,tens),'written by tests/fuzz/tools/seeds.py: a 1-layer llama, F16')
put('gguf','qwen2-moe-header.gguf',gguf('qwen2moe',[('qwen2moe.block_count',4,2),('qwen2moe.embedding_length',4,64),('qwen2moe.attention.head_count',4,4),('qwen2moe.expert_count',4,8),('qwen2moe.expert_used_count',4,2),('general.file_type',4,15)],[('token_embd.weight',[64,4],0)]),'written: a MoE header')
put('gguf','v2-empty.gguf',gguf('llama',[],[],version=2),'written: v2, no tensors')
# write SOURCES.md
with open(C+'/SOURCES.md','w') as fh:
    fh.write('# Seed corpora of the fuzz targets\n\nOne folder per target (tests/fuzz/fuzz_TARGET.c). Written once by\n`python3 tests/fuzz/tools/seeds.py` from the files named here; targets whose input stands for\nseveral files join them with "\\n##\\n" (FUZZ_SEP), and targets whose first byte picks a route,\nfile or query carry that byte first. Inputs that once failed are kept beside them as\n`crash-*` / `regress-*`.\n\n')
    for t in sorted(src):
        fh.write(f'## {t}\n\n')
        for n,s in src[t]: fh.write(f'- `{n}`: {s}\n')
        fh.write('\n')
print({t:len(v) for t,v in src.items()})

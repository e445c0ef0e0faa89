"""Second, independent model of kvcheck simulate for testdata/sim/tiny10.jsonl (TestTiny10).

Written from the prose of internal/sim/model.go and the policies' doc comments, sharing no code
with the simulator or with reference.py. Prints, per policy, the routes, hits (blocks), hit
tokens, requests per replica and evictions. Usage: python3 testdata/sim/tiny10.py [trace]
"""
import json, sys, heapq, math
from collections import OrderedDict
BS=512; R=2; C=4; MAXRUN=2; PRE=0.001; DEC=0.01
rows=[json.loads(l) for l in open(sys.argv[1] if len(sys.argv) > 1 else 'testdata/sim/tiny10.jsonl')]
reqs=[dict(t=r['timestamp']/1000, inp=r['input_length'], out=r['output_length'], b=r['hash_ids']) for r in rows]
def full(q): return min(len(q['b']), q['inp']//BS)
def lim(q): return 0 if q['inp']<=0 else min(len(q['b']), (q['inp']-1)//BS)

def run(pol):
    caches=[dict() for _ in range(R)]   # key -> refs
    lru=[OrderedDict() for _ in range(R)]  # evictable keys in order (front evicted first)
    waiting=[[] for _ in range(R)]; pq=[[] for _ in range(R)]; busy=[False]*R; running=[0]*R; active=[0]*R
    ev=[]; seq=[0]; evict=[0]*R; routed=[0]*R
    idx=[OrderedDict() for _ in range(R)]  # approx index
    rr=[0]
    def sched(t,k,j):
        seq[0]+=1; heapq.heappush(ev,(t,seq[0],k,j))
    def pin(i,k):
        if k not in caches[i]: return False
        if caches[i][k]==0: del lru[i][k]
        caches[i][k]+=1; return True
    def unpin(i,k):
        caches[i][k]-=1
        if caches[i][k]==0: lru[i][k]=1
    def insert(i,k):
        if pin(i,k): return True
        if len(caches[i])>=C:
            if not lru[i]: return False
            v,_=lru[i].popitem(last=False); del caches[i][v]; evict[i]+=1
        caches[i][k]=1; return True
    def start(i,t):
        if busy[i] or not pq[i]: return
        j=pq[i].pop(0); q=reqs[j['r']]
        h=0
        while h<lim(q) and pin(i,q['b'][h]): h+=1
        j['hit']=h; j['pinned']=h; busy[i]=True
        sched(t+(q['inp']-h*BS)*PRE,0,j)
    def admit(i,t):
        while running[i]<MAXRUN and waiting[i]:
            j=waiting[i].pop(0); running[i]+=1; active[i]+=len(reqs[j['r']]['b']); pq[i].append(j)
        start(i,t)
    def pdone(j,t):
        i=j['rep']; q=reqs[j['r']]
        for k in range(j['pinned'], full(q)):
            if not insert(i,q['b'][k]): break
            j['pinned']=k+1
        j['ttft']=t-q['t']; busy[i]=False
        sched(t+q['out']*DEC,1,j); start(i,t)
    def fin(j,t):
        i=j['rep']; q=reqs[j['r']]
        for k in range(j['pinned']-1,-1,-1): unpin(i,q['b'][k])
        running[i]-=1; active[i]-=len(q['b']); admit(i,t)
    def advance(t):
        while ev and ev[0][0]<=t:
            tt,_,k,j=heapq.heappop(ev)
            (pdone if k==0 else fin)(j,tt)
    inflight=lambda i: len(waiting[i])+running[i]
    queued=lambda i: len(waiting[i])+len(pq[i])
    def ovl(q,i):
        m=0
        while m<lim(q) and q['b'][m] in caches[i]: m+=1
        return m
    def best(score):
        bi=0; bs=score(0)
        for i in range(1,R):
            s=score(i)
            if s>bs or (s==bs and inflight(i)<inflight(bi)): bi,bs=i,s
        return bi
    def llmd(prefix):
        qs=[queued(i) for i in range(R)]; mn,mx=min(qs),max(qs)
        def sc(i):
            qq=1.0 if mx==mn else (mx-qs[i])/(mx-mn)
            return 2*qq+2*(1-min(active[i],C)/C)+3*prefix(i)
        return best(sc)
    jobs=[]
    for r,q in enumerate(reqs):
        advance(q['t'])
        if pol=='round-robin': i=rr[0]%R; rr[0]=i+1
        elif pol=='least-loaded': i=best(lambda i:-inflight(i))
        elif pol=='kv-llmd': i=llmd(lambda i: ovl(q,i)/len(q['b']) if q['b'] else 0)
        elif pol=='kv-cost':
            i=best(lambda i: -((q['inp']-ovl(q,i)*BS)/BS + active[i]+len(q['b'])))
        elif pol=='kv-longest':
            o=[ovl(q,k) for k in range(R)]; i=o.index(max(o))
        elif pol=='kv-decay':
            i=best(lambda i: -((q['inp']-ovl(q,i)/(1+0.5*queued(i))*BS)/BS + active[i]+len(q['b'])))
        elif pol=='kv-load':
            busiest=max([1]+[inflight(k) for k in range(R)])
            i=best(lambda i: (ovl(q,i)*BS/q['inp'] if q['inp'] else 0) - inflight(i)/busiest)
        elif pol=='approx-prefix':
            def am(i):
                m=0
                while m<lim(q) and q['b'][m] in idx[i]: m+=1
                return m
            i=llmd(lambda i: am(i)/len(q['b']) if q['b'] else 0)
            for k in range(full(q)):
                key=q['b'][k]
                if key in idx[i]: idx[i].move_to_end(key)
                else:
                    if len(idx[i])>=C: idx[i].popitem(last=False)
                    idx[i][key]=1
        j=dict(r=r,rep=i,hit=0); jobs.append(j); routed[i]+=1
        waiting[i].append(j); admit(i,q['t'])
    advance(float('inf'))
    ht=sum(j['hit'] for j in jobs)*BS
    return dict(policy=pol, routes=[j['rep'] for j in jobs], hits=[j['hit'] for j in jobs], hit_tokens=ht, per_replica=routed, evictions=sum(evict))
for p in ['round-robin','least-loaded','kv-longest','kv-llmd','kv-cost','kv-load','kv-decay','approx-prefix']:
    print(json.dumps(run(p)))

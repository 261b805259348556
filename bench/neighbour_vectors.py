#!/usr/bin/env python3
"""Neighbour context by vectors instead of text, measured offline (semantic ranking only, project scope) on the
LoCoMo dev set: each message embedded alone ('own'); with the previous message's last 300 characters in front of
its text (what the index does today, 'ctx300'); and its own vector plus alpha times the previous message's own
vector, renormalised ('comb<alpha>'), which costs no extra tokens.

    python3 bench/neighbour_vectors.py [/tmp/locomo-dev] [path/to/ghola]
"""
import json, subprocess, sys, os
import numpy as np
root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/locomo-dev"
ghola = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "../target/release/ghola")
msgs=[json.loads(l) for l in open(os.path.join(root, 'messages.jsonl')) if l.strip()]
gold=json.load(open(os.path.join(root, 'gold.json')))
# order within session by timestamp then dia number
def dia(m):
    d=m.get('dia_id','D0:0'); a,b=d[1:].split(':'); return (int(a),int(b))
msgs.sort(key=lambda m:(m['conversation'],m['session'],dia(m)))
prev=[None]*len(msgs)
for i in range(1,len(msgs)):
    if msgs[i]['session_id']==msgs[i-1]['session_id']: prev[i]=i-1
def embed(texts):
    inp=''.join(json.dumps({'text':t})+'\n' for t in texts)
    out=subprocess.run([ghola,'embed'],input=inp,capture_output=True,text=True,check=True).stdout
    return np.array([json.loads(l) for l in out.splitlines() if l.strip()],dtype=np.float32)
own=embed([m['text'] for m in msgs])
ctx=embed([ (msgs[prev[i]]['text'][-300:]+'\n'+m['text']) if prev[i] is not None else m['text'] for i,m in enumerate(msgs)])
qv=embed([g['question'] for g in gold])
def norm(v): return v/np.linalg.norm(v,axis=1,keepdims=True)
P=np.array([p if p is not None else i for i,p in enumerate(prev)])
variants={'own':own,'ctx300':ctx}
for a in (0.3,0.5,0.7,1.0):
    variants[f'comb{a}']=norm(own+a*own[P]*(np.array([p is not None for p in prev])[:,None]))
uuid=[m['uuid'] for m in msgs]; conv=np.array([m['conversation'] for m in msgs])
for name,V in variants.items():
    any1=any10=mrr=0
    for k,g in enumerate(gold):
        idx=np.where(conv==g['conversation'])[0]
        s=V[idx]@qv[k]
        order=idx[np.argsort(-s)][:10]
        ranks=[r for r,i in enumerate(order) if uuid[i] in g['gold_uuids']]
        if ranks:
            any10+=1; mrr+=1/(ranks[0]+1); any1+= ranks[0]==0
    n=len(gold); print(f"{name:8} any@1 {any1/n:.3f} any@10 {any10/n:.3f} MRR@10 {mrr/n:.3f}")

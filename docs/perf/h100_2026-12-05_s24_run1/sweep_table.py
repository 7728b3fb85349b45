import csv,sys,collections
col=sys.argv[2] if len(sys.argv)>2 else 'us'
rows=[r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
pts=collections.defaultdict(dict)
for r in rows:
    if not r['impl'].startswith('fp4kit') or r['impl'].endswith('.best'): continue
    try: us=float(r[col])
    except: continue
    tid=r['tactic'].split(':')[0]; name=r['tactic'].split(':')[1].split(' ')[0]

    key=tid+('' if r['impl'].endswith('w4a16') else '/4')
    k=(r['shape'],int(r['M']),r['impl'][7:])
    pts[k][tid]=(us,name,'(auto)' in r['tactic'])
for k in sorted(pts):
    d=pts[k]
    auto=[(v[0],t,v[1]) for t,v in d.items() if v[2]]
    best=sorted((v[0],t,v[1]) for t,v in d.items())[:3]
    sk={t:v[0] for t,v in d.items() if v[1].endswith('_sk')}
    a=auto[0] if auto else (float('nan'),'-','-')
    print(f"{k[0]:<18}{k[1]:>5} {k[2]:<6} auto {a[1]:>3} {a[2]:<24}{a[0]:8.1f} | best "+"  ".join(f"{t}:{n} {u:.1f} ({u/a[0]:.3f})" for u,t,n in best)+" | sk "+" ".join(f"{t}:{u/a[0]:.3f}" for t,u in sorted(sk.items())))

#!/usr/bin/env bash
# The BMP sweep of docs/bmp.md section 8: shadow runs, their audits, the tables.
# Resumable: a finished run (summary.json) or audit (.npz) is skipped, a half-trained run resumes
# chunk by chunk; stop it at any time and call it again. Usage:
#   notebooks/scripts/bmp_sweep.sh RUNS_DIR [ratio|gnn|all]
# RUNS_DIR holds shadow/ and findings/ (keep it outside the repository); the tables and the figure
# go to notebooks/figures. Needs the data sets (JAXAUDIT_DATA).
set -euo pipefail
root=${1:?usage: bmp_sweep.sh RUNS_DIR [ratio|gnn|all]}
what=${2:-all}
models=${MODELS:-64}
cd "$(dirname "$0")/../.."
run() { # dataset model sampler edges ratio
  local dir="$root/shadow/$1_$2_$3_$4_r$5_m$models"
  [[ -f "$dir/summary.json" ]] && return 0
  echo "shadow: $(basename "$dir")"
  python -m jaxaudit shadow --dataset "$1" --model "$2" --sampler "$3" --edge-access "$4" \
    --ratio "$5" --models "$models" --epochs 200 --seed 0 --quiet --out "$dir" >/dev/null
}
for ds in cora citeseer; do
  if [[ $what == ratio || $what == all ]]; then
    for s in uniform snowball; do for r in 0.2 0.35 0.5 0.65 0.8; do run $ds gcn $s inductive $r; done; done
  fi
  if [[ $what == gnn || $what == all ]]; then
    for m in gcn sage gat; do
      for s in uniform snowball random_walk; do run $ds $m $s inductive 0.5; done
      run $ds $m uniform full 0.5; run $ds $m uniform none 0.5
    done
  fi
done
python notebooks/scripts/bmp_findings.py --shadow-root "$root/shadow" --out "$root/findings" \
  --warmup 150 --samples 200 --bootstrap 10 --nuts-nodes 100 --prior-draws 500
python notebooks/scripts/bmp_sweep_tables.py --findings "$root/findings" \
  --shadow-root "$root/shadow" --out notebooks/figures

#!/usr/bin/env python3
"""scripts/acceptance.py on small hand-made CSVs: each verdict follows from the numbers (CPU only)."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "acceptance.py")

GEMM = """# device NVIDIA H200 sms=132 l2=60MB cc=9.0
# copy_bw_TBps(read+write) 4.000
# peak_TFLOPs cuBLASLt bf16 700.0 (8192^3 probe 700.0), fp8 1400.0 (probe 1400.0)
shape,N,K,M,impl,us,graph_us,TFLOP/s,wTB/s,x_bf16,x_fp8,roof,rel_err,check,tactic
seed.8192x28672,8192,28672,1,cublas.bf16,130.00,120.00,3.6,3.6,-,0.5,0.9,-,ref,cand 0/8
seed.8192x28672,8192,28672,1,cublas.fp8,70.00,60.00,6.7,3.4,1.8,-,0.9,-,-,cand 0/8
seed.8192x28672,8192,28672,1,fp4kit.w4a16,40.00,36.00,11.7,3.3,3.2,1.7,0.8,1e-4,ok,49:decode_dpr_m8_r16_u4 (auto)
seed.8192x28672,8192,28672,2,cublas.bf16,130.00,120.00,3.6,3.6,-,0.5,0.9,-,ref,cand 0/8
seed.8192x28672,8192,28672,2,cublas.fp8,70.00,60.00,6.7,3.4,1.8,-,0.9,-,-,cand 0/8
seed.8192x28672,8192,28672,2,fp4kit.w4a16,42.00,39.00,11.7,3.3,3.1,1.6,0.8,1e-4,ok,49:decode_dpr_m8_r16_u4 (auto)
seed.8192x28672,8192,28672,4,cublas.bf16,130.00,120.00,3.6,3.6,-,0.5,0.9,-,ref,cand 0/8
seed.8192x28672,8192,28672,4,cublas.fp8,70.00,60.00,6.7,3.4,1.8,-,0.9,-,-,cand 0/8
seed.8192x28672,8192,28672,4,fp4kit.w4a4,-,-,-,-,-,-,-,-,ERROR,-
llama8b.o,4096,4096,1,fp4kit.w4a16,9.00,5.00,3.7,1.0,-,-,0.2,1e-4,ok,49:decode_dpr_m8_r16_u4 (auto)
seed.8192x8192,8192,8192,64,fp4kit.w4a16,25.00,22.00,43.0,1.5,-,-,0.86,1e-4,ok,7:wgmma (auto)
seed.8192x8192,8192,8192,32,fp4kit.w4a16,25.00,-,21.0,1.5,-,-,0.40,1e-4,ok,17:wgmma (auto)
"""

MOE = """# device NVIDIA H200 sms=132 l2=60MB cc=9.0
# copy_bw_TBps(read+write) 4.000
preset,H,E,k,I,T,routing,impl,us,graph_us,tables,n_act,act_MB,wTB/s,bw/copy,TFLOP/s,x_bf16,x_dense,rel_err,check,note
qwen3.6-35b-a3b,2048,256,8,512,1,uniform,fp4kit.w4a16,14.00,10.00,1,8.0,14.2,1.0,0.3,1.0,-,-,1e-4,ok,per-entry;
deepseek-v3,7168,256,8,2048,4,uniform,fp4kit.w4a16,300.00,250.00,1,32.0,792.7,3.1,0.79,13.4,-,-,1e-4,ok,fused-decode;
deepseek-v3,7168,256,8,2048,1,uniform,fp4kit.w4a4,80.00,75.00,1,8.0,198.2,2.6,0.66,9.7,-,-,0,ok,per-entry;
mixtral-8x7b,4096,8,2,14336,4096,uniform,fp4kit.w4a16,4952.16,-,1,8.0,792.7,0.16,0.04,582.8,0.86,0.95,-,-,
"""


class AcceptanceScript(unittest.TestCase):
    def run_script(self, *files):
        out = subprocess.run([sys.executable, SCRIPT, "--marlin", os.devnull, *files], capture_output=True, text=True,
                             check=True)
        return out.stdout

    def test_verdicts(self):
        with tempfile.TemporaryDirectory() as d:
            g, m = os.path.join(d, "g.csv"), os.path.join(d, "m.csv")
            for path, text in ((g, GEMM), (m, MOE)):
                with open(path, "w") as f:
                    f.write(text)
            text = self.run_script(g, m)
        lines = text.splitlines()

        def line(prefix, *words):
            hits = [l for l in lines if l.strip().startswith(prefix) and all(w in l for w in words)]
            self.assertEqual(len(hits), 1, f"{prefix} {words}:\n{text}")
            return hits[0]

        # 132.1 MB in 36 us at 4.0 TB/s = 0.92, 120/36 = 3.33x BF16, 60/36 = 1.67x FP8: met.
        self.assertTrue(line("seed.8192x28672", "w4a16", " 1 ").endswith("met"))
        # 60/39 = 1.54x FP8: missed although BW (0.85) and BF16 (3.08x) hold; the FP8 line asks for
        # 60 / 1.6 = 37.5 us, a 3.8 % cut.
        self.assertIn("-3.8%  MISSED", line("seed.8192x28672", "w4a16", " 2 "))
        # A point that could not run is a miss, with its check status shown.
        self.assertIn("MISSED CHECK ERROR", line("seed.8192x28672", "w4a4", " 4 "))
        self.assertIn("#5 a: 1/3 points met", text)
        # No Marlin figure given: no verdict for the smaller layer.
        self.assertIn("no Marlin figure", line("llama8b.o", "w4a16"))
        # Roofline over graph replay where measured: 0.86 * 25 / 22 = 0.98 met; M = 32 eager 0.40.
        self.assertIn("#5 c: 1/2 points met", text)
        # The miss needs 1 - 0.40 / 0.85 = 52.9 % less time.
        self.assertIn("-52.9%  MISSED", line("seed.8192x8192", "w4a16", " 32 "))
        # MoE: 792.7 MB in 250 us at 4.0 TB/s = 0.79 met; 198.2 MB in 75 us = 0.66 missed.
        self.assertTrue(line("deepseek-v3", "w4a16", "T=4").endswith("met"))
        # ... 0.70 of 4.0 TB/s asks for 198.2 MB in 70.8 us: a 5.6 % cut.
        self.assertIn("-5.6%  MISSED", line("deepseek-v3", "w4a4", "T=1"))
        self.assertIn("met", line("qwen3.6-35b-a3b", "w4a16", "10.00"))
        self.assertIn("#7 b: 1/1 points met", text)
        self.assertIn("#7 c: 1/1 points met", text)

    def test_marlin_reference_is_the_largest_measured_m_below(self):
        gemm = "\n".join(GEMM.splitlines()[:4] + [
            "llama8b.o,4096,4096,4,fp4kit.w4a16,9.50,5.00,3.7,1.0,-,-,0.2,1e-4,ok,49:x (auto)"]) + "\n"
        with tempfile.TemporaryDirectory() as d:
            g, mf = os.path.join(d, "g.csv"), os.path.join(d, "marlin.txt")
            with open(g, "w") as f:
                f.write(gemm)
            with open(mf, "w") as f:
                f.write("N K M us\n4096 4096 1 9.00\n4096 4096 8 10.00\n")
            out = subprocess.run([sys.executable, SCRIPT, "--marlin", mf, g], capture_output=True, text=True,
                                 check=True).stdout
        # M = 4 is judged against Marlin's M = 1 (9.00 us): 9.50 us per call is not faster.
        self.assertIn("9.00  MISSED", out)

    def test_no_files_prints_usage(self):
        out = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, check=True)
        self.assertIn("acceptance", out.stdout)


if __name__ == "__main__":
    unittest.main()

"""GPU proxy timing of one SSL iteration in PyTorch, for machines without TensorFlow.

The GPU host measured here carries PyTorch and CUDA 13 but no TensorFlow, and reaches no
package registry (TensorFlow 2.21's wheel alone is 546 MiB, plus ~2.5 GB of CUDA 12
libraries). So `bin/benchmark` could not run on it. This script times the same computation,
written from algorithm.md#networks, #critic-objective in PyTorch, to project what one
iteration and a full CIFAR-10 run cost on such a GPU. It is a proxy, not a measurement of tf_ipmssl: both
frameworks hand the convolutions to cuDNN, but kernel choices, fusion and launch overheads
differ (docs/performance.md says how the numbers were used).

One iteration = n_c critic steps + one generator step, batch 64 of labeled, unlabeled and
generated 32x32x3 images, K+1 critic (f = f+ − f-, f+ = Σ softmax(S)·S, f- = v·Φ), Adam on
both networks:
  * fisher:           Ω_F(f), the critic's rows in one stacked forward (192 images).
  * fisher_sobolev:   Ω_F(f) + Ω_S(f-): the 128 real/fake rows in a second forward whose
                      input gradients are differentiated again (double backward).
Precisions: fp32 (TF32 off), tf32 (TF32 matmuls/convs, as TensorFlow does by default on
Ampere+), bf16 (autocast; losses in fp32).

  python3 studies/gpu_projection/gpu_torch_proxy.py --json_out=proxy.json
  python3 studies/gpu_projection/gpu_torch_proxy.py --device=cpu --iterations=1 --warmup=0   # smoke test
"""
import argparse
import json
import platform
import time

import torch
from torch import nn
import torch.nn.functional as F

WIDTHS = (96, 192, 384)


def critic_body(channels=3):
  """Φ of algorithm.md#networks (no normalization): 9 convs with LReLU(0.2) and dropout, 6144 features."""
  a, b, c = WIDTHS
  layers = [nn.Dropout(0.2), nn.Conv2d(channels, a, 3, 1, 1), nn.LeakyReLU(0.2)]
  spec = ((a, a, 3, 1, 1, False), (a, a, 3, 2, 1, True), (a, b, 3, 1, 1, False),
          (b, b, 3, 1, 1, False), (b, b, 3, 2, 1, True), (b, c, 3, 1, 0, True),
          (c, c, 3, 1, 0, True), (c, c, 1, 1, 0, True))
  for cin, cout, k, s, p, drop in spec:
    layers += [nn.Conv2d(cin, cout, k, s, p, bias=False), nn.LeakyReLU(0.2)]
    if drop:
      layers.append(nn.Dropout(0.5))
  layers.append(nn.Flatten())
  return nn.Sequential(*layers)


class Critic(nn.Module):

  def __init__(self, num_classes=10):
    super().__init__()
    self.body = critic_body()
    self.v = nn.Linear(6144, 1, bias=False)
    self.s = nn.Linear(6144, num_classes)

  def forward(self, x):
    phi = self.body(x)
    return self.v(phi).squeeze(-1).float(), self.s(phi).float()


def generator(ngf=64, noise_dim=100, channels=3):
  """docs/algorithm.md#networks generator: DCGAN with two extra 3x3 convs, batch norm, tanh."""
  def block(layer, cout):
    return [layer, nn.BatchNorm2d(cout), nn.ReLU()]
  return nn.Sequential(
      nn.Unflatten(1, (noise_dim, 1, 1)),
      *block(nn.ConvTranspose2d(noise_dim, 4 * ngf, 4, 1, 0, bias=False), 4 * ngf),
      *block(nn.ConvTranspose2d(4 * ngf, 2 * ngf, 4, 2, 1, bias=False), 2 * ngf),
      *block(nn.ConvTranspose2d(2 * ngf, ngf, 4, 2, 1, bias=False), ngf),
      *block(nn.Conv2d(ngf, ngf, 3, 1, 1, bias=False), ngf),
      *block(nn.Conv2d(ngf, ngf, 3, 1, 1, bias=False), ngf),
      nn.ConvTranspose2d(ngf, channels, 4, 2, 1, bias=False), nn.Tanh())


def critic_values(critic, x):
  """(f, f-) per example of the K+1 critic."""
  f_neg, logits = critic(x)
  f_pos = (torch.softmax(logits, -1) * logits).sum(-1)
  return f_pos - f_neg, f_neg, logits


class Iteration:
  """One SSL iteration (n_c critic steps + 1 generator step) of a config."""

  def __init__(self, config, n_c, batch, device, autocast_dtype):
    self.config, self.n_c, self.batch, self.device = config, n_c, batch, device
    self.autocast_dtype = autocast_dtype
    self.critic = Critic().to(device)
    self.generator = generator().to(device)
    self.opt_c = torch.optim.Adam(self.critic.parameters(), 2e-4, betas=(0.5, 0.999))
    self.opt_g = torch.optim.Adam(self.generator.parameters(), 2e-4, betas=(0.5, 0.999))
    self.lam = torch.zeros((), device=device)
    g = torch.Generator(device='cpu').manual_seed(0)
    self.labeled = torch.rand(batch, 3, 32, 32, generator=g).mul(2).sub(1).to(device)
    self.labels = torch.randint(0, 10, (batch,), generator=g).to(device)
    self.unlabeled = torch.rand(batch, 3, 32, 32, generator=g).mul(2).sub(1).to(device)

  def _autocast(self):
    return torch.autocast(self.device.type, dtype=self.autocast_dtype,
                          enabled=self.autocast_dtype is not None)

  def critic_step(self):
    with torch.no_grad(), self._autocast():
      fake = self.generator(torch.randn(self.batch, 100, device=self.device)).float()
    b = self.batch
    with self._autocast():
      if self.config == 'fisher':
        f, _, logits = critic_values(self.critic, torch.cat([self.labeled, self.unlabeled, fake]))
        f_real, f_fake, logits = f[b:2 * b], f[2 * b:], logits[:b]
        omega_s = 0.0
      else:  # Sobolev on f-: input gradients of the real/fake rows, differentiated again.
        rows = torch.cat([self.unlabeled, fake]).requires_grad_(True)
        f, f_neg, _ = critic_values(self.critic, rows)
        (grad,) = torch.autograd.grad(f_neg.sum(), rows, create_graph=True)
        omega_s = 0.5 * grad.float().pow(2).flatten(1).sum(1).mean() * 2
        f_real, f_fake = f[:b], f[b:]
        _, logits = self.critic(self.labeled)
    ipm = f_real.mean() - f_fake.mean()
    omega = 0.5 * (f_real.pow(2).mean() + f_fake.pow(2).mean())
    ce = F.cross_entropy(logits.float(), self.labels)
    loss = -(ipm + self.lam * (1 - omega) - 0.5e-7 * (1 - omega) ** 2) + 1.5 * ce
    if self.config != 'fisher':
      loss = loss + 1e-8 * omega_s
    self.opt_c.zero_grad(set_to_none=True)
    loss.backward()
    self.opt_c.step()
    self.lam = (self.lam + 1e-7 * (1 - omega.detach()))

  def generator_step(self):
    with self._autocast():
      fake = self.generator(torch.randn(self.batch, 100, device=self.device))
      f, _, _ = critic_values(self.critic, fake.float())
      loss = -f.mean()
    self.opt_g.zero_grad(set_to_none=True)
    loss.backward()
    self.opt_g.step()

  def __call__(self):
    for _ in range(self.n_c):
      self.critic_step()
    self.generator_step()


def synchronize(device):
  if device.type == 'cuda':
    torch.cuda.synchronize()


def time_calls(fn, device, warmup, iterations):
  for _ in range(warmup):
    fn()
  synchronize(device)
  times = []
  for _ in range(iterations):
    start = time.perf_counter()
    fn()
    synchronize(device)
    times.append(time.perf_counter() - start)
  times.sort()
  return {'median_s': times[len(times) // 2], 'min_s': times[0], 'max_s': times[-1]}


def matmul_rate(device, dtype, n, warmup, iterations):
  a = torch.randn(n, n, device=device, dtype=dtype)
  b = torch.randn(n, n, device=device, dtype=dtype)
  t = time_calls(lambda: a @ b, device, warmup, iterations)
  return 2 * n ** 3 / t['median_s'] / 1e9


def set_precision(name):
  """(autocast dtype or None); sets TF32 on/off for matmuls and cuDNN."""
  tf32 = name == 'tf32'
  torch.backends.cuda.matmul.allow_tf32 = tf32
  torch.backends.cudnn.allow_tf32 = tf32
  return torch.bfloat16 if name == 'bf16' else None


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--device', default='cuda')
  parser.add_argument('--configs', default='fisher,fisher_sobolev')
  parser.add_argument('--precisions', default='fp32,tf32,bf16')
  parser.add_argument('--critic_iterations', default='1,2')
  parser.add_argument('--batch', type=int, default=64)
  parser.add_argument('--warmup', type=int, default=10)
  parser.add_argument('--iterations', type=int, default=30)
  parser.add_argument('--matmul_n', type=int, default=8192)
  parser.add_argument('--json_out', default=None)
  args = parser.parse_args()
  device = torch.device(args.device)
  torch.backends.cudnn.benchmark = True
  torch.manual_seed(0)
  record = {'torch': torch.__version__, 'python': platform.python_version(),
            'device': torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu',
            'batch': args.batch, 'matmul_gflops': {}, 'iterations': [], 'eval': {}}
  print(f"{record['device']}, torch {torch.__version__}")
  for precision in args.precisions.split(','):
    dtype = set_precision(precision)
    rate = matmul_rate(device, dtype or torch.float32, args.matmul_n, 3,
                       max(3, args.iterations // 3))
    record['matmul_gflops'][precision] = rate
    print(f'matmul {args.matmul_n}^3 {precision}: {rate:,.0f} GFLOP/s')
    critic = Critic().to(device).eval()
    images = torch.rand(1000, 3, 32, 32, device=device).mul(2).sub(1)

    def evaluate():
      with torch.no_grad(), torch.autocast(device.type, dtype=dtype or torch.float32,
                                            enabled=dtype is not None):
        critic.s(critic.body(images))
    t = time_calls(evaluate, device, args.warmup, args.iterations)
    record['eval'][precision] = {**t, 'images_per_s': 1000 / t['median_s']}
    print(f'  eval forward, batch 1000: {1000 / t["median_s"]:,.0f} images/s')
    for config in args.configs.split(','):
      for n_c in (int(n) for n in args.critic_iterations.split(',')):
        iteration = Iteration(config, n_c, args.batch, device, dtype)
        t = time_calls(iteration, device, args.warmup, args.iterations)
        record['iterations'].append({'config': config, 'precision': precision, 'n_c': n_c,
                                     **t})
        print(f'  {config:15s} n_c={n_c}: {t["median_s"] * 1e3:7.2f} ms/iteration '
              f'[{t["min_s"] * 1e3:.2f}-{t["max_s"] * 1e3:.2f}]')
  if args.json_out:
    with open(args.json_out, 'w') as f:
      json.dump(record, f, indent=1)


if __name__ == '__main__':
  main()

"""The line a run prints at every log step: step, epoch, speed, ETA and the logged values."""
import math

# The progress line shows these values (and every omega/ and lambda/).
SHOWN = ('ce', 'ipm', 'critic_loss', 'generator_loss')


def format_duration(seconds):
  if not math.isfinite(seconds):
    return '?'
  seconds = int(seconds)
  hours, rest = divmod(seconds, 3600)
  minutes, secs = divmod(rest, 60)
  return f'{hours}h{minutes:02d}m{secs:02d}s' if hours else f'{minutes}m{secs:02d}s'


def progress_line(step, total_steps, epoch, images_per_second, eta_seconds, scalars,
                  validation_error=None):
  """One line: step, epoch, speed, ETA, then the logged scalars (CE, IPM, Ω's, λ's...)."""
  parts = [f'step {step}/{total_steps}', f'epoch {epoch:.2f}',
           f'{images_per_second:.1f} img/s', f'ETA {format_duration(eta_seconds)}']
  for name in sorted(scalars):
    parts.append(f'{name} {scalars[name]:.4g}')
  if validation_error is not None:
    parts.append(f'val_err {validation_error:.2f}%')
  return ' | '.join(parts)

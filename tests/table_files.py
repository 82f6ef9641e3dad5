"""A table of your own for tests: its JSON file and its cells' gin files (table_file.py)."""
import json
import os

TABLE = {
    'name': 'own_table_test',
    'title': 'Own table: test error %',
    'row_header': 'critic',
    'rows': [['supervised', 'supervised only'], ['kplus1', 'K+1, Ω_F(f)']],
    'columns': [['fashion_mnist', '100', '100'], ['fashion_mnist', '1000', '1000']],
    'x_label': 'labels',
    'gin_dir': 'configs',
}


def write_table(folder, gin_files=True, **changes):
  """The JSON file of TABLE with `changes` (None: the key left out) in `folder`, and with
  gin_files, its cells' gin files in folder/configs (a comment naming the row and column, and
  a binding); returns the file's path."""
  spec = {**TABLE, **changes}
  spec = {k: v for k, v in spec.items() if v is not None}
  path = os.path.join(folder, 'table.json')
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(spec, f, ensure_ascii=False)
  if gin_files:
    os.makedirs(os.path.join(folder, 'configs'), exist_ok=True)
    for row, _ in spec['rows']:
      for dataset, column, _ in spec['columns']:
        name = f'{dataset}_{row}' + (f'_{column}' if column else '') + '.gin'
        with open(os.path.join(folder, 'configs', name), 'w') as f:
          f.write(f"# {row} {column}\ntrain.steps = 2\n")
  return path

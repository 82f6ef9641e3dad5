"""What each paper cell's configuration must be, derived from its table, row and column.

An independent restatement of algorithm.md#optimizer-and-weight-decay, the paper's tables and
its Appendix B (not read from the gin files), against which the gin files are checked.
"""
LABELS = {'cifar10': 4000, 'svhn': 1000}
EPOCHS = {'cifar10': 350, 'svhn': 100}
TRAIN_SIZES = {'cifar10': 50000, 'svhn': 73257}
COMPONENTS = {'f': 'f', 'fneg': 'f_neg', 'fpos': 'f_pos'}
APPENDIX_A_NORMALIZATIONS = {
    'fisher_batch_norm': 'batch_norm', 'fisher_layer_norm': 'layer_norm_singleton_per_channel',
    'fisher_none': 'none', 'fisher_sobolev_none': 'none'}
APPENDIX_C_NORMALIZATIONS = {'batch_norm': 'batch_norm',
                             'layer_norm': 'layer_norm_singleton_per_channel', 'none': 'none'}


def _table2_constraints(row):
  """'fisher_fpos_sobolev_fneg' -> {'fisher': 'f_pos', 'sobolev': 'f_neg'}."""
  parts = row.split('_')
  return {parts[i]: COMPONENTS[parts[i + 1]] for i in range(0, len(parts), 2)}


def constraints(cell):
  """{constraint kind: component} of an SSL cell (kinds as Constraint.kind)."""
  if cell.table == 'table1':
    plain = cell.column == 'plain'
    return {'wgan_clip': {'clip': 'f'}, 'wgan_gp': {'gp': 'f'}, 'fisher': {'fisher': 'f'},
            'sobolev': {'sobolev': 'f'},
            # K+1: Sobolev on f- (the paper's Section 3.1).
            'fisher_sobolev': {'fisher': 'f', 'sobolev': 'f' if plain else 'f_neg'}}[cell.row]
  if cell.table == 'table2':
    return _table2_constraints(cell.row)
  if cell.table == 'table3':
    return {'fisher': {'fisher': 'f'},
            'fisher_sobolev': {'fisher': 'f', 'sobolev': 'f_neg'}}[cell.column]
  if cell.table == 'appendix_a':
    if 'sobolev' in cell.row:
      return {'fisher': 'f', 'sobolev': 'f_neg'}
    return {'fisher': 'f'}
  return {}


def bindings(cell):
  """{gin parameter: value} that the cell's gin file must give."""
  expected = {'build_ssl_data.dataset': cell.dataset, 'build_critic.width': 1.0,
              'train.batch_size': 64}
  if cell.table == 'appendix_c':
    expected.update({
        'train.mode': 'supervised',
        'build_critic.normalization': APPENDIX_C_NORMALIZATIONS[cell.row],
        'build_ssl_data.num_labeled': None if cell.column == 'all' else LABELS[cell.dataset],
        'train.optimizer': 'adam', 'train.critic_learning_rate': 2e-4})
    if cell.column == 'all':
      expected['train.epochs'] = EPOCHS[cell.dataset]
    else:
      # As many updates as the SSL critic: the epochs over the 5k-validation-less train set.
      expected['train.steps'] = EPOCHS[cell.dataset] * ((TRAIN_SIZES[cell.dataset] - 5000) // 64)
    return expected
  kinds = constraints(cell)
  formulation = cell.column if cell.table == 'table1' else 'kplus1'
  expected.update({
      'train.mode': 'ssl', 'build_generator.ngf': 64,
      'ssl.formulation': formulation,
      'ssl.lambda_ce': 0.1 if formulation == 'plain' else 1.5,
      'train.epochs': EPOCHS[cell.dataset],
      'build_ssl_data.validation_size': 5000,
      'Fisher.penalty_weight': 1e-7,
      'Sobolev.penalty_weight': 1e-8,
      'train.weight_decay_phi_s': 1e-6,
      'train.weight_decay_v': 1e-3,
  })
  if 'gp' in kinds:
    expected.update({'train.optimizer': 'adam', 'ssl.critic_iterations': 5,
                     'train.critic_learning_rate': 1e-4, 'train.generator_learning_rate': 1e-4,
                     'GradientPenalty.weight': 10.0})
  elif 'clip' in kinds:
    expected.update({'train.optimizer': 'rmsprop', 'ssl.critic_iterations': 5,
                     'train.critic_learning_rate': 5e-5, 'train.generator_learning_rate': 5e-5,
                     'WeightClipping.clip_value': 0.01})
  else:
    expected.update({'train.optimizer': 'adam', 'train.critic_learning_rate': 2e-4,
                     'train.generator_learning_rate': 2e-4, 'train.adam_beta1': 0.5,
                     'ssl.critic_iterations': 2})
  if cell.table == 'appendix_a':
    expected['build_ssl_data.num_labeled'] = int(cell.column[:-1]) * 1000
    expected['build_critic.normalization'] = APPENDIX_A_NORMALIZATIONS[cell.row]
    if cell.row == 'fisher_sobolev_none':
      expected['ssl.critic_iterations'] = 1  # Appendix B: n_c = 1 for this row.
  else:
    expected['build_ssl_data.num_labeled'] = LABELS[cell.dataset]
    expected['build_critic.normalization'] = cell.row if cell.table == 'table3' else 'none'
  return expected


def optimizer(cell):
  """{RunConfig.train field: value} of the cell's effective optimizer: the paper's Appendix B
  ("unless noted otherwise, Adam with β1 = 0.5 and β2 = 0.999, both for critic and
  generator"), with PyTorch's ε = 1e-8 added to the bias-corrected √v̂ (algorithm.md); the
  WGAN-clip cells use RMSprop, for which none of these applies."""
  if cell.table == 'table1' and cell.row == 'wgan_clip':
    return {'optimizer': 'rmsprop'}
  return {'optimizer': 'adam', 'adam_beta1': 0.5, 'adam_beta2': 0.999, 'adam_epsilon': 1e-8,
          'adam_epsilon_placement': 'bias_corrected'}


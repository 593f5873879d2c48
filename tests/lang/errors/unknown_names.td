# Unknown names say what was meant: the closest name in scope or among the
# built-ins, or the tdsl spelling of a Python habit.
import nn

model Net {
  fc = nn.Linear(4, 4)
  fn forward(x: f32[N, 4]) -> f32[N, 4] {
    let hidden = fc(x)
    let a = hiden + 1.0                  # error: unknown name 'hiden'
    let b = reul(hidden)                 # error: unknown name 'reul'
    let c = self.fc(x)                   # error: unknown name 'self'
    let d = torch.relu(x)                # error: unknown name 'torch'
    let e = nn.Linaer(4, 4)              # error: module 'nn' has no item 'Linaer'
    let f = fc.wieght                    # error: model 'Linear' has no member 'wieght'
    let g = x.mean()                     # error: a tensor has no field 'mean'
    let k = True                         # error: unknown name 'True'
    undefined = 3                        # error: assignment to 'undefined', which is not defined
    hidden
  }
}
# help: did you mean 'hidden'?
# help: did you mean 'relu'?
# help: inside a model method, members are in scope by name: write fc(x), not self.fc(x)
# help: tdsl has its built-ins at top level: write relu(x), not torch.relu(x)
# help: did you mean 'nn.Linear'?
# help: did you mean 'weight'?
# help: booleans are written true and false
# help: introduce it with let: let undefined = ...

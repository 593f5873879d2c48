# char_rnn.td - a character-level LSTM language model over the text of the
# GPL (/usr/share/common-licenses/GPL-3): embedding -> nn.LSTM (a scan) ->
# linear to the logits of the next character, at every position.
#
#   D=examples/char_rnn_data.py
#   python3 $D windows /usr/share/common-licenses/GPL-3 /tmp/gpl    # [N, 64] windows
#   tdsl train examples/char_rnn.td --train /tmp/gpl/train_x.npy,/tmp/gpl/train_y.npy \
#       --test /tmp/gpl/test_x.npy,/tmp/gpl/test_y.npy --batch 32 --epochs 10 \
#       --save-weights /tmp/gpl/w.safetensors
#   python3 $D encode "This License" /tmp/gpl/prime.npy   # the prime
#   python3 $D count 200 /tmp/gpl/n.npy                    # K = 200 characters
#   python3 $D temp 0.7 /tmp/gpl/temp.npy                  # 0: greedy
#   tdsl run examples/char_rnn.td --entry Train.sample --weights /tmp/gpl/w.safetensors \
#       --in prime=/tmp/gpl/prime.npy --in n=/tmp/gpl/n.npy --in temp=/tmp/gpl/temp.npy \
#       --out /tmp/gpl/out.npy [--compiled]
#   python3 $D decode /tmp/gpl/out.npy
#
# The data are windows of T character ids, x: i64[N, T], and the labels the
# next character at every position, y: i64[N, T] (tdsl train takes labels of
# the shape of step's y).  The vocabulary is fixed (96 ids: newline and
# printable ASCII, see examples/char_rnn_data.py), so its size is a literal
# here.  10 epochs (310 steps) take about 4 minutes on two cores and reach a
# test loss of 2.12 and 44.8 % of next characters right (docs/training.md).
import nn
import optim

model CharLSTM(vocab: int = 96, emb: int = 32, hidden: int = 256) {
  embedding = nn.Embedding(vocab, emb)
  lstm = nn.LSTM(emb, hidden, batch_first = true)
  head = nn.Linear(hidden, vocab)
  # logits of the next character after every position: [B, T] -> [B, T, vocab]
  fn forward(x: i64[B, T]) -> f32[B, T, vocab] {
    let (ys, state) = lstm(embedding(x))
    head(ys)
  }
  # one step of generation: feeds character `ch` (i64[1]) and picks the next
  # one, argmax(logits + temp * Gumbel noise): a draw from softmax(logits /
  # temp) (the Gumbel-max trick), greedy at temp 0.
  fn gen_step(carry, i, temp) {
    let (h, c, ch) = carry
    let xw = embedding(ch) @ lstm.weight_ih_l0.T + lstm.bias_ih_l0
    let (state, h2) = lstm.step((h, c), xw)
    let (h3, c3) = state
    let u = rand([1, vocab])
    let gumbel = -log(-log(u * 0.999998 + 0.000001))
    let next = argmax(head(h2) + temp * gumbel, axis = -1)
    ((h3, c3, next), next[0])
  }
  # K characters after `prime` (P >= 1; K is the length of `n`, whose values are
  # unused): the LSTM reads prime[0 .. P-2], then a scan of K steps starts
  # from prime[P-1], each step feeding the character the previous one chose.
  fn generate(prime: i64[P], n: i64[K], temp: f32[]) -> i64[K] {
    let (ys, state) = lstm.run(unsqueeze(embedding(prime[0:P - 1]), 0), zeros([1, hidden]), zeros([1, hidden]))
    let (h, c) = state
    let (carry, out) = scan(gen_step, (h[0], c[0], prime[P - 1:P]), length = K, args = temp)
    out
  }
}

model Train(hidden: int = 256, lr: float = 0.002) {
  net = CharLSTM(hidden = hidden)
  opt = optim.Adam(net, lr = lr)
  vocab = 96
  fn loss(x, y) {
    nn.cross_entropy(reshape(net(x), [-1, vocab]), reshape(y, [-1]))
  }
  # one step: the batch's mean loss over every position; updates net and opt
  fn step(x: i64[B, T], y: i64[B, T]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(optim.clip_grad_norm(g, 1.0))
    l
  }
  # the mean loss and the number of positions whose next character is right
  fn evaluate(x: i64[B, T], y: i64[B, T]) -> (f32[], i64[]) {
    let logits = net(x)
    (nn.cross_entropy(reshape(logits, [-1, vocab]), reshape(y, [-1])),
     sum(i64(argmax(logits, axis = -1) == y)))
  }
  # K characters generated after `prime` (see CharLSTM.generate)
  fn sample(prime: i64[P], n: i64[K], temp: f32[]) -> i64[K] {
    net.generate(prime, n, temp)
  }
}

#!/usr/bin/python3
"""A word-level LSTM language model written as pytorch/examples'
word_language_model is: the corpus sliced into batches by index (no
DataLoader), the hidden state carried from batch to batch, the learning
rate annealed by hand when the validation loss stops improving. Tiny (a
synthetic corpus of 257 tokens, 8 batches an epoch) so that it runs in
seconds on a CPU."""
import argparse
import hashlib
import time

import torch
import torch.nn as nn
import spotrun.torch as st

parser = argparse.ArgumentParser(description="a tiny LSTM language model")
parser.add_argument("--lr", type=float, default=20, help="initial learning rate")
parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
parser.add_argument("--epochs", type=int, default=3, help="upper epoch limit")
parser.add_argument("--batch_size", type=int, default=4, help="batch size")
parser.add_argument("--bptt", type=int, default=8, help="sequence length")
parser.add_argument("--seed", type=int, default=1111, help="random seed")
parser.add_argument("--pace", type=float, default=0, help="seconds to sleep after each batch")
parser.add_argument("--out", default="", help="write the final weights' sha256 here")
args = parser.parse_args()
torch.manual_seed(args.seed)
torch.set_num_threads(1)

ntokens = 50
corpus = torch.Generator().manual_seed(7)
train_ids = torch.randint(0, ntokens, (4 * 64 + 1,), generator=corpus)
val_ids = torch.randint(0, ntokens, (2 * 32 + 1,), generator=corpus)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


train_data = batchify(train_ids, args.batch_size)
val_data = batchify(val_ids, 2)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


model = RNNModel(ntokens, 16, 16, 2)
criterion = nn.NLLLoss()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(2)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(epoch):
    model.train()
    hidden = state.carry("hidden", lambda: hidden, model.init_hidden(args.batch_size))
    for batch, i in state.batches(enumerate(range(0, train_data.size(0) - 1, args.bptt))):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        print("| epoch %d | batch %d | lr %g | loss %.6f" % (epoch, batch, lr, loss.item()), flush=True)
        time.sleep(args.pace)


lr = args.lr
best_val_loss = None
state = st.State(model=model, keep=["lr", "best_val_loss"])
for epoch in state.epochs(1, args.epochs + 1):
    train(epoch)
    val_loss = evaluate(val_data)
    print("| end of epoch %d | valid loss %.6f" % (epoch, val_loss), flush=True)
    if not best_val_loss or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        lr /= 4.0

digest = hashlib.sha256()
for t in model.state_dict().values():
    digest.update(t.numpy().tobytes())
digest.update(repr(lr).encode())
print("final weights sha256: %s" % digest.hexdigest())
if args.out:
    with open(args.out, "w") as f:
        f.write(digest.hexdigest() + "\n")

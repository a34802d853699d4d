"""Recurrent cells with hand-written backwards: a GRU cell, an LSTM cell (two outputs), a minimal
gated linear scan over time and an Elman step (BLIND corpus, see README.md)."""
import torch


def _gru_gates(x, h, W, U):
    hidden = h.shape[1]
    gx = x @ W
    gh = h @ U
    r = torch.sigmoid(gx[:, :hidden] + gh[:, :hidden])
    z = torch.sigmoid(gx[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
    hn = gh[:, 2 * hidden:]
    n = torch.tanh(gx[:, 2 * hidden:] + r * hn)
    return r, z, n, hn


def _gru_inputs():
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    h = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    W = 0.5 * torch.randn(4, 12, dtype=torch.float64, generator=gen)
    U = 0.5 * torch.randn(4, 12, dtype=torch.float64, generator=gen)
    return x, h, W, U


class ForeignGRUCell(torch.autograd.Function):
    """h' = (1 - z) * n + z * h with PyTorch's gate layout [r | z | n]."""

    bug = None

    @staticmethod
    def forward(ctx, x, h, W, U):
        r, z, n, hn = _gru_gates(x, h, W, U)
        ctx.save_for_backward(x, h, W, U, r, z, n, hn)
        return (1 - z) * n + z * h

    @staticmethod
    def backward(ctx, grad_h_new):
        x, h, W, U, r, z, n, hn = ctx.saved_tensors
        d_n = grad_h_new * (1 - z)
        d_z = grad_h_new * (h - n)
        d_n_pre = d_n * (1 - n * n)
        d_r = d_n_pre * hn
        d_r_pre = d_r * r * (1 - r)
        d_z_pre = d_z * z * (1 - z)
        d_gx = torch.cat([d_r_pre, d_z_pre, d_n_pre], dim=1)
        d_gh = torch.cat([d_r_pre, d_z_pre, d_n_pre * r], dim=1)
        grad_x = d_gx @ W.t()
        grad_h = d_gh @ U.t() + grad_h_new * z
        grad_W = x.t() @ d_gx
        grad_U = h.t() @ d_gh
        return grad_x, grad_h, grad_W, grad_U

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class ForeignGRUCellNoCarry(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "h",
           "note": "the hidden state's gradient is taken through the gates only; the direct "
                   "carry path z * h (grad * z) is never added"}

    @staticmethod
    def forward(ctx, x, h, W, U):
        r, z, n, hn = _gru_gates(x, h, W, U)
        ctx.save_for_backward(x, h, W, U)
        ctx.gates = (r, z, n, hn)
        return (1 - z) * n + z * h

    @staticmethod
    def backward(ctx, grad_out):
        x, h, W, U = ctx.saved_tensors
        r, z, n, hn = ctx.gates
        hidden = h.shape[1]
        dpre = torch.empty(x.shape[0], 3 * hidden, dtype=x.dtype)
        dn_pre = grad_out * (1 - z) * (1 - n ** 2)
        dpre[:, 2 * hidden:] = dn_pre
        dpre[:, hidden:2 * hidden] = grad_out * (h - n) * z * (1 - z)
        dpre[:, :hidden] = dn_pre * hn * r * (1 - r)
        dpre_h = dpre.clone()
        dpre_h[:, 2 * hidden:] *= r
        grad_h = dpre_h @ U.t()  # BUG
        return dpre @ W.t(), grad_h, x.t() @ dpre, h.t() @ dpre_h

    @staticmethod
    def example_inputs():
        return _gru_inputs()


class ForeignGRUCellRecurrentWeightFromInput(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "U",
           "note": "the recurrent weight's gradient multiplies the gate gradients by the input x "
                   "instead of the previous hidden state h (copied from the W line)"}

    @staticmethod
    def forward(ctx, x, h, W, U):
        r, z, n, hn = _gru_gates(x, h, W, U)
        ctx.save_for_backward(x, h, W, U, r, z, n, hn)
        return (1 - z) * n + z * h

    @staticmethod
    def backward(ctx, grad_h_new):
        x, h, W, U, r, z, n, hn = ctx.saved_tensors
        d_n_pre = grad_h_new * (1 - z) * (1 - n * n)
        d_z_pre = grad_h_new * (h - n) * z * (1 - z)
        d_r_pre = d_n_pre * hn * r * (1 - r)
        d_gx = torch.cat([d_r_pre, d_z_pre, d_n_pre], dim=1)
        d_gh = torch.cat([d_r_pre, d_z_pre, d_n_pre * r], dim=1)
        grad_W = x.t() @ d_gx
        grad_U = x.t() @ d_gh  # BUG
        grad_x = d_gx @ W.t()
        grad_h = d_gh @ U.t() + grad_h_new * z
        return grad_x, grad_h, grad_W, grad_U

    @staticmethod
    def example_inputs():
        return _gru_inputs()


# ------------------------------------------------------------------------------------------ LSTM
def _lstm_inputs():
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(3, 2, dtype=torch.float64, generator=gen)
    h = torch.randn(3, 2, dtype=torch.float64, generator=gen)
    c = torch.randn(3, 2, dtype=torch.float64, generator=gen)
    W = 0.7 * torch.randn(4, 8, dtype=torch.float64, generator=gen)
    return x, h, c, W


def _lstm_forward(x, h, c, W):
    xh = torch.cat([x, h], dim=1)
    i, f, g, o = (xh @ W).chunk(4, dim=1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c_new = f * c + i * g
    return xh, (i, f, g, o), c_new


class ForeignLSTMCell(torch.autograd.Function):
    """(h', c') of an LSTM cell, gates [i | f | g | o] from one weight on cat(x, h)."""

    bug = None

    @staticmethod
    def forward(ctx, x, h, c, W):
        xh, gates, c_new = _lstm_forward(x, h, c, W)
        tc = torch.tanh(c_new)
        ctx.save_for_backward(xh, c, W, tc, *gates)
        ctx.split = x.shape[1]
        return gates[3] * tc, c_new

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        xh, c, W, tc, i, f, g, o = ctx.saved_tensors
        dc = grad_c + grad_h * o * (1 - tc * tc)
        d_i = dc * g * i * (1 - i)
        d_f = dc * c * f * (1 - f)
        d_g = dc * i * (1 - g * g)
        d_o = grad_h * tc * o * (1 - o)
        d_gates = torch.cat([d_i, d_f, d_g, d_o], dim=1)
        d_xh = d_gates @ W.T
        return d_xh[:, :ctx.split], d_xh[:, ctx.split:], dc * f, xh.T @ d_gates

    @staticmethod
    def example_inputs():
        return _lstm_inputs()


class ForeignLSTMCellTanhPlus(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "c",
           "note": "the derivative of tanh(c') is written 1 + tanh(c')**2 instead of 1 - tanh(c')**2"}

    @staticmethod
    def forward(ctx, x, h, c, W):
        xh, gates, c_new = _lstm_forward(x, h, c, W)
        ctx.xh, ctx.c, ctx.W = xh, c, W
        ctx.gates, ctx.c_new = gates, c_new
        return gates[3] * torch.tanh(c_new), c_new

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        i, f, g, o = ctx.gates
        tc = torch.tanh(ctx.c_new)
        dtanh = 1 + tc * tc  # BUG
        dc = grad_c + grad_h * o * dtanh
        pieces = []
        for gate_grad, gate, squash in ((dc * g, i, "sig"), (dc * ctx.c, f, "sig"),
                                        (dc * i, g, "tanh"), (grad_h * tc, o, "sig")):
            local = gate * (1 - gate) if squash == "sig" else 1 - gate * gate
            pieces.append(gate_grad * local)
        d_gates = torch.cat(pieces, dim=1)
        d_xh = d_gates @ ctx.W.T
        n_in = d_xh.shape[1] - ctx.c.shape[1]
        return d_xh[:, :n_in], d_xh[:, n_in:], dc * f, ctx.xh.T @ d_gates

    @staticmethod
    def example_inputs():
        return _lstm_inputs()


class ForeignLSTMCellDropsCellGrad(torch.autograd.Function):
    bug = {"kind": "missing_term", "input": "c",
           "note": "the cell-state gradient keeps only the path through h' = o * tanh(c'); the "
                   "incoming gradient of the second output c' is never added"}

    @staticmethod
    def forward(ctx, x, h, c, W):
        xh, gates, c_new = _lstm_forward(x, h, c, W)
        tc = torch.tanh(c_new)
        ctx.save_for_backward(xh, c, W, tc, *gates)
        return gates[3] * tc, c_new

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        xh, c, W, tc, i, f, g, o = ctx.saved_tensors
        dc = grad_h * o * (1 - tc.pow(2))  # BUG
        d_gates = torch.cat([dc * g * i * (1 - i), dc * c * f * (1 - f),
                             dc * i * (1 - g.pow(2)), grad_h * tc * o * (1 - o)], dim=1)
        grad_x, grad_h_prev = (d_gates @ W.T).split([2, 2], dim=1)
        return grad_x, grad_h_prev, dc * f, xh.T @ d_gates

    @staticmethod
    def example_inputs():
        return _lstm_inputs()


# ---------------------------------------------------------------------------- gated linear scan
def _scan_inputs():
    gen = torch.Generator().manual_seed(13)
    a = torch.sigmoid(torch.randn(5, 3, dtype=torch.float64, generator=gen))
    x = torch.randn(5, 3, dtype=torch.float64, generator=gen)
    return a, x


def _scan(a, x):
    out = torch.empty_like(x)
    state = torch.zeros_like(x[0])
    for t in range(x.shape[0]):
        state = a[t] * state + x[t]
        out[t] = state
    return out


class ForeignGatedScan(torch.autograd.Function):
    """h_t = a_t * h_{t-1} + x_t over time (dim 0), h_{-1} = 0; returns every h_t."""

    bug = None

    @staticmethod
    def forward(ctx, a, x):
        states = _scan(a, x)
        ctx.save_for_backward(a, states)
        return states

    @staticmethod
    def backward(ctx, grad_states):
        a, states = ctx.saved_tensors
        grad_a = torch.zeros_like(a)
        grad_x = torch.zeros_like(a)
        carry = torch.zeros_like(a[0])
        for t in reversed(range(a.shape[0])):
            dh = grad_states[t] + carry
            grad_x[t] = dh
            if t > 0:
                grad_a[t] = dh * states[t - 1]
            carry = dh * a[t]
        return grad_a, grad_x

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ForeignGatedScanForwardSweep(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "x",
           "note": "the adjoint recursion is run forward in time (t = 0..T-1) instead of from the "
                   "last step back"}

    @staticmethod
    def forward(ctx, a, x):
        states = _scan(a, x)
        ctx.save_for_backward(a, states)
        return states

    @staticmethod
    def backward(ctx, grad_states):
        a, states = ctx.saved_tensors
        T = a.shape[0]
        dxs, das = [], []
        carry = 0.0
        for t in range(T):  # BUG
            dh = grad_states[t] + carry
            dxs.append(dh)
            das.append(dh * states[t - 1] if t > 0 else torch.zeros_like(dh))
            carry = a[t] * dh
        return torch.stack(das), torch.stack(dxs)

    @staticmethod
    def example_inputs():
        return _scan_inputs()


class ForeignGatedScanGateTimesCurrent(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "a",
           "note": "the gate's gradient uses the state h_t it produced instead of the previous "
                   "state h_{t-1} it multiplied"}

    @staticmethod
    def forward(ctx, a, x):
        states = _scan(a, x)
        ctx.save_for_backward(a, states)
        return states

    @staticmethod
    def backward(ctx, grad_states):
        a, states = ctx.saved_tensors
        adj = grad_states.clone()
        for t in range(a.shape[0] - 2, -1, -1):
            adj[t] += a[t + 1] * adj[t + 1]
        grad_a = adj * states  # BUG
        return grad_a, adj

    @staticmethod
    def example_inputs():
        return _scan_inputs()


# ----------------------------------------------------------------------------------- Elman step
def _elman_inputs():
    gen = torch.Generator().manual_seed(14)
    x = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    h = torch.randn(3, 4, dtype=torch.float64, generator=gen)
    Wx = 0.5 * torch.randn(4, 4, dtype=torch.float64, generator=gen)
    Wh = 0.5 * torch.randn(4, 4, dtype=torch.float64, generator=gen)
    b = torch.randn(4, dtype=torch.float64, generator=gen)
    return x, h, Wx, Wh, b


class ForeignElmanStep(torch.autograd.Function):
    """h' = tanh(x Wx^T + h Wh^T + b), weights stored (out, in) as nn.RNNCell does."""

    bug = None

    @staticmethod
    def forward(ctx, x, h, Wx, Wh, b):
        out = torch.tanh(x @ Wx.t() + h @ Wh.t() + b)
        ctx.save_for_backward(x, h, Wx, Wh, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, h, Wx, Wh, out = ctx.saved_tensors
        d = grad_out * (1 - out * out)
        grad_x = grad_h = grad_Wx = grad_Wh = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = d @ Wx
        if ctx.needs_input_grad[1]:
            grad_h = d @ Wh
        if ctx.needs_input_grad[2]:
            grad_Wx = d.t() @ x
        if ctx.needs_input_grad[3]:
            grad_Wh = d.t() @ h
        if ctx.needs_input_grad[4]:
            grad_b = d.sum(0)
        return grad_x, grad_h, grad_Wx, grad_Wh, grad_b

    @staticmethod
    def example_inputs():
        return _elman_inputs()


class ForeignElmanStepHiddenTransposed(torch.autograd.Function):
    bug = {"kind": "transposed", "input": "h",
           "note": "the gradient to the previous state multiplies by Wh^T, the matrix the forward "
                   "used, instead of Wh"}

    @staticmethod
    def forward(ctx, x, h, Wx, Wh, b):
        pre = torch.addmm(b, x, Wx.t()) + h @ Wh.t()
        out = torch.tanh(pre)
        ctx.save_for_backward(x, h, Wx, Wh, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, h, Wx, Wh, out = ctx.saved_tensors
        d = grad_out * (1 - out.square())
        grad_h = torch.mm(d, Wh.t())  # BUG
        return torch.mm(d, Wx), grad_h, torch.mm(d.t(), x), torch.mm(d.t(), h), d.sum(0)

    @staticmethod
    def example_inputs():
        return _elman_inputs()


class ForeignElmanStepWeightsSwapped(torch.autograd.Function):
    bug = {"kind": "swapped", "input": "Wx",
           "note": "the two weight gradients are returned in the order (Wh, Wx) while forward "
                   "takes (Wx, Wh)"}

    @staticmethod
    def forward(ctx, x, h, Wx, Wh, b):
        out = torch.tanh(x @ Wx.t() + h @ Wh.t() + b)
        ctx.save_for_backward(x, h, Wx, Wh, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, h, Wx, Wh, out = ctx.saved_tensors
        d = grad_out * (1 - out * out)
        weight_grads = {"Wx": d.t() @ x, "Wh": d.t() @ h}
        inputs_grads = (d @ Wx, d @ Wh)
        return (*inputs_grads, weight_grads["Wh"], weight_grads["Wx"], d.sum(0))  # BUG

    @staticmethod
    def example_inputs():
        return _elman_inputs()

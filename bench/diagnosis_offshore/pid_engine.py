import gradcli as torch

"""A PID controller unrolled over time on gradcli's engine: u_t = kp e_t + ki dt sum_{s<=t} e_s
+ kd (e_t - e_{t-1}) / dt for B loops with learned per-loop gains (B, 1), and an anti-windup
variant whose integrator is clamped to +-imax step by step (a Python loop)."""


def _pid_inputs():
    gen = torch.Generator().manual_seed(17)
    err = torch.randn(4, 6, generator=gen, dtype=torch.float64)
    kp = torch.rand(4, 1, generator=gen, dtype=torch.float64) + 0.5
    ki = torch.rand(4, 1, generator=gen, dtype=torch.float64) + 0.2
    kd = torch.rand(4, 1, generator=gen, dtype=torch.float64) + 0.1
    return err, kp, ki, kd, 0.5


def _shift_right(t):
    """e_{t-1} with e_{-1} = 0."""
    return torch.cat([torch.zeros_like(t[:, :1]), t[:, :-1]], dim=1)


def _shift_left(t):
    """g_{t+1} with g_T = 0."""
    return torch.cat([t[:, 1:], torch.zeros_like(t[:, :1])], dim=1)


class OffshorePIDUnrolled(torch.autograd.Function):
    bug = None

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        deriv = (err - _shift_right(err)) / dt
        ctx.save_for_backward(err, integ, deriv, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * deriv

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, deriv, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        rev = torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1])
        grad_err = kp * grad_out + ki * dt * rev + kd * (grad_out - _shift_left(grad_out)) / dt
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        grad_kd = (grad_out * deriv).sum(dim=1, keepdim=True)
        return grad_err, grad_kp, grad_ki, grad_kd, None

    @staticmethod
    def example_inputs():
        return _pid_inputs()


class OffshorePIDUnrolledLoop(torch.autograd.Function):
    """The same controller; backward walks time backwards with an integral adjoint."""

    bug = None

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        deriv = (err - _shift_right(err)) / dt
        ctx.save_for_backward(err, integ, deriv, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * deriv

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, deriv, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        T = err.shape[1]
        cols = [None] * T
        lam = torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(T)):
            lam = lam + grad_out[:, t]
            nxt = grad_out[:, t + 1] if t + 1 < T else torch.zeros_like(lam)
            cols[t] = kp[:, 0] * grad_out[:, t] + ki[:, 0] * dt * lam + kd[:, 0] * (grad_out[:, t] - nxt) / dt
        grad_err = torch.stack(cols, dim=1)
        return (grad_err, (grad_out * err).sum(1, keepdim=True), (grad_out * integ).sum(1, keepdim=True),
                (grad_out * deriv).sum(1, keepdim=True), None)

    @staticmethod
    def example_inputs():
        return _pid_inputs()


class OffshorePIDIntegralNoFlip(torch.autograd.Function):
    bug = {"kind": "missing_flip", "input": "err",
           "note": "the integral's adjoint is a forward cumsum of grad_out; it must be a reversed cumsum"}

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        deriv = (err - _shift_right(err)) / dt
        ctx.save_for_backward(err, integ, deriv, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * deriv

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, deriv, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        rev = torch.cumsum(grad_out, dim=1)  # BUG
        grad_err = kp * grad_out + ki * dt * rev + kd * (grad_out - _shift_left(grad_out)) / dt
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        grad_kd = (grad_out * deriv).sum(dim=1, keepdim=True)
        return grad_err, grad_kp, grad_ki, grad_kd, None

    @staticmethod
    def example_inputs():
        return _pid_inputs()


class OffshorePIDDerivativeShiftSign(torch.autograd.Function):
    bug = {"kind": "term_sign", "input": "err",
           "note": "the derivative term's adjoint adds g_{t+1} instead of subtracting it"}

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        deriv = (err - _shift_right(err)) / dt
        ctx.save_for_backward(err, integ, deriv, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * deriv

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, deriv, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        rev = torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1])
        grad_err = kp * grad_out + ki * dt * rev + kd * (grad_out + _shift_left(grad_out)) / dt  # BUG
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        grad_kd = (grad_out * deriv).sum(dim=1, keepdim=True)
        return grad_err, grad_kp, grad_ki, grad_kd, None

    @staticmethod
    def example_inputs():
        return _pid_inputs()


class OffshorePIDKiUsesError(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "ki",
           "note": "ki's gradient multiplies grad_out by the error (times dt) instead of by the integral"}

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        deriv = (err - _shift_right(err)) / dt
        ctx.save_for_backward(err, integ, deriv, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * deriv

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, deriv, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        rev = torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1])
        grad_err = kp * grad_out + ki * dt * rev + kd * (grad_out - _shift_left(grad_out)) / dt
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * err * dt).sum(dim=1, keepdim=True)  # BUG
        grad_kd = (grad_out * deriv).sum(dim=1, keepdim=True)
        return grad_err, grad_kp, grad_ki, grad_kd, None

    @staticmethod
    def example_inputs():
        return _pid_inputs()


class OffshorePIDKdNoDt(torch.autograd.Function):
    bug = {"kind": "scale", "input": "kd",
           "note": "kd's gradient uses the raw difference e_t - e_{t-1}, forgetting the 1/dt (dt = 0.5: twice too large)"}

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        diff = err - _shift_right(err)
        ctx.save_for_backward(err, integ, diff, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * diff / dt

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, diff, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        rev = torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1])
        grad_err = kp * grad_out + ki * dt * rev + kd * (grad_out - _shift_left(grad_out)) / dt
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        grad_kd = (grad_out * diff).sum(dim=1, keepdim=True)  # BUG
        return grad_err, grad_kp, grad_ki, grad_kd, None

    @staticmethod
    def example_inputs():
        return _pid_inputs()


class OffshorePIDGainIgnoresGrad(torch.autograd.Function):
    bug = {"kind": "ignores_grad_output", "input": "kp",
           "note": "kp's gradient is the summed error alone, never multiplied by grad_out"}

    @staticmethod
    def forward(ctx, err, kp, ki, kd, dt):
        integ = torch.cumsum(err, dim=1) * dt
        deriv = (err - _shift_right(err)) / dt
        ctx.save_for_backward(err, integ, deriv, kp, ki, kd)
        ctx.dt = dt
        return kp * err + ki * integ + kd * deriv

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, deriv, kp, ki, kd = ctx.saved_tensors
        dt = ctx.dt
        rev = torch.flip(torch.cumsum(torch.flip(grad_out, [1]), dim=1), [1])
        grad_err = kp * grad_out + ki * dt * rev + kd * (grad_out - _shift_left(grad_out)) / dt
        grad_kp = err.sum(dim=1, keepdim=True)  # BUG
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        grad_kd = (grad_out * deriv).sum(dim=1, keepdim=True)
        return grad_err, grad_kp, grad_ki, grad_kd, None

    @staticmethod
    def example_inputs():
        return _pid_inputs()


def _windup_inputs():
    err = torch.tensor([[0.9, 1.1, 0.8, -0.3, -0.2, 0.4],
                        [-0.6, -1.2, -1.0, 0.1, 0.7, 0.5],
                        [0.3, -0.4, 0.2, 0.1, -0.5, 0.3]], dtype=torch.float64)
    kp = torch.tensor([[0.8], [1.2], [0.6]], dtype=torch.float64)
    ki = torch.tensor([[0.5], [0.9], [1.4]], dtype=torch.float64)
    return err, kp, ki, 0.6


class OffshorePIDAntiWindup(torch.autograd.Function):
    """u_t = kp e_t + ki I_t, I_t = clamp(I_{t-1} + e_t dt, -imax, imax): dt fixed at 0.5, imax a float."""

    bug = None

    @staticmethod
    def forward(ctx, err, kp, ki, imax):
        T = err.shape[1]
        acc = torch.zeros_like(err[:, 0])
        ints, keep = [], []
        for t in range(T):
            s = acc + 0.5 * err[:, t]
            keep.append(s.abs() < imax)
            acc = s.clamp(-imax, imax)
            ints.append(acc)
        integ = torch.stack(ints, dim=1)
        ctx.save_for_backward(err, integ, torch.stack(keep, dim=1), kp, ki)
        return kp * err + ki * integ

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, keep, kp, ki = ctx.saved_tensors
        T = err.shape[1]
        cols = [None] * T
        lam_next = torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(T)):
            lam_int = ki[:, 0] * grad_out[:, t] + lam_next
            lam_s = torch.where(keep[:, t], lam_int, torch.zeros_like(lam_int))
            cols[t] = kp[:, 0] * grad_out[:, t] + 0.5 * lam_s
            lam_next = lam_s
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        return torch.stack(cols, dim=1), grad_kp, grad_ki, None

    @staticmethod
    def example_inputs():
        return _windup_inputs()


class OffshorePIDAntiWindupNoMask(torch.autograd.Function):
    bug = {"kind": "region", "input": "err",
           "note": "the integrator adjoint flows through the steps where the clamp saturated; the mask is dropped"}

    @staticmethod
    def forward(ctx, err, kp, ki, imax):
        T = err.shape[1]
        acc = torch.zeros_like(err[:, 0])
        ints, keep = [], []
        for t in range(T):
            s = acc + 0.5 * err[:, t]
            keep.append(s.abs() < imax)
            acc = s.clamp(-imax, imax)
            ints.append(acc)
        integ = torch.stack(ints, dim=1)
        ctx.save_for_backward(err, integ, torch.stack(keep, dim=1), kp, ki)
        return kp * err + ki * integ

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, keep, kp, ki = ctx.saved_tensors
        T = err.shape[1]
        cols = [None] * T
        lam_next = torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(T)):
            lam_int = ki[:, 0] * grad_out[:, t] + lam_next
            lam_s = lam_int  # BUG
            cols[t] = kp[:, 0] * grad_out[:, t] + 0.5 * lam_s
            lam_next = lam_s
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        return torch.stack(cols, dim=1), grad_kp, grad_ki, None

    @staticmethod
    def example_inputs():
        return _windup_inputs()


class OffshorePIDAntiWindupMaskInverted(torch.autograd.Function):
    bug = {"kind": "region", "input": "err",
           "note": "the mask is inverted: the adjoint passes only where the integrator saturated"}

    @staticmethod
    def forward(ctx, err, kp, ki, imax):
        T = err.shape[1]
        acc = torch.zeros_like(err[:, 0])
        ints, keep = [], []
        for t in range(T):
            s = acc + 0.5 * err[:, t]
            keep.append(s.abs() < imax)
            acc = s.clamp(-imax, imax)
            ints.append(acc)
        integ = torch.stack(ints, dim=1)
        ctx.save_for_backward(err, integ, torch.stack(keep, dim=1), kp, ki)
        return kp * err + ki * integ

    @staticmethod
    def backward(ctx, grad_out):
        err, integ, keep, kp, ki = ctx.saved_tensors
        T = err.shape[1]
        cols = [None] * T
        lam_next = torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(T)):
            lam_int = ki[:, 0] * grad_out[:, t] + lam_next
            lam_s = torch.where(keep[:, t], torch.zeros_like(lam_int), lam_int)  # BUG
            cols[t] = kp[:, 0] * grad_out[:, t] + 0.5 * lam_s
            lam_next = lam_s
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * integ).sum(dim=1, keepdim=True)
        return torch.stack(cols, dim=1), grad_kp, grad_ki, None

    @staticmethod
    def example_inputs():
        return _windup_inputs()


class OffshorePIDAntiWindupKiUsesSum(torch.autograd.Function):
    bug = {"kind": "wrong_variable", "input": "ki",
           "note": "ki's gradient uses the unclamped running sum s_t instead of the clamped integrator I_t"}

    @staticmethod
    def forward(ctx, err, kp, ki, imax):
        T = err.shape[1]
        acc = torch.zeros_like(err[:, 0])
        ints, sums, keep = [], [], []
        for t in range(T):
            s = acc + 0.5 * err[:, t]
            sums.append(s)
            keep.append(s.abs() < imax)
            acc = s.clamp(-imax, imax)
            ints.append(acc)
        integ = torch.stack(ints, dim=1)
        ctx.save_for_backward(err, torch.stack(sums, dim=1), torch.stack(keep, dim=1), kp, ki)
        return kp * err + ki * integ

    @staticmethod
    def backward(ctx, grad_out):
        err, sums, keep, kp, ki = ctx.saved_tensors
        T = err.shape[1]
        cols = [None] * T
        lam_next = torch.zeros_like(grad_out[:, 0])
        for t in reversed(range(T)):
            lam_int = ki[:, 0] * grad_out[:, t] + lam_next
            lam_s = torch.where(keep[:, t], lam_int, torch.zeros_like(lam_int))
            cols[t] = kp[:, 0] * grad_out[:, t] + 0.5 * lam_s
            lam_next = lam_s
        grad_kp = (grad_out * err).sum(dim=1, keepdim=True)
        grad_ki = (grad_out * sums).sum(dim=1, keepdim=True)  # BUG
        return torch.stack(cols, dim=1), grad_kp, grad_ki, None

    @staticmethod
    def example_inputs():
        return _windup_inputs()

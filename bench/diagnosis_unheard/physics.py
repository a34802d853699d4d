"""Physics and simulation: spring energies over an edge list, a softened Coulomb potential, an
explicit Euler step of a damped oscillator, a midpoint (RK2) step of y' = a sin y, and the tip of a
two-link arm (forward kinematics with sin / cos)."""
import torch

REST = 1.0      # spring rest length
SOFT = 0.3      # Coulomb softening length
DT = 0.1        # Euler step
DAMP = 0.3      # damping of the oscillator
H = 0.4         # RK2 step
L1, L2 = 1.0, 0.7  # arm links


def _spring_inputs():
    g = torch.Generator().manual_seed(11)
    pos = torch.randn(5, 2, dtype=torch.float64, generator=g) * 1.5
    k = torch.rand(6, dtype=torch.float64, generator=g) + 0.5
    edges = torch.tensor([[0, 1], [1, 2], [2, 0], [0, 3], [3, 4], [1, 4]])  # nodes 0, 1, 4 repeat
    return pos, k, edges


def _spring_geometry(pos, edges):
    i, j = edges[:, 0], edges[:, 1]
    d = pos[i] - pos[j]
    return i, j, d, d.norm(dim=1)


# ------------------------------------------------------------------------------------ springs
class UnheardSpringEnergy(torch.autograd.Function):
    """Per-edge energy 0.5 k (|p_i - p_j| - L)^2 over an integer edge list."""

    bug = None

    @staticmethod
    def forward(ctx, pos, k, edges):
        i, j, d, length = _spring_geometry(pos, edges)
        ctx.save_for_backward(pos, k, edges)
        return 0.5 * k * (length - REST) ** 2

    @staticmethod
    def backward(ctx, grad_energy):
        pos, k, edges = ctx.saved_tensors
        i, j, d, length = _spring_geometry(pos, edges)
        stretch = length - REST
        force = (grad_energy * k * stretch / length)[:, None] * d
        grad_pos = torch.zeros_like(pos)
        grad_pos.index_add_(0, i, force)
        grad_pos.index_add_(0, j, -force)
        grad_k = 0.5 * grad_energy * stretch ** 2
        return grad_pos, grad_k, None

    example_inputs = staticmethod(_spring_inputs)


class UnheardSpringEnergyFancyIndexAdd(torch.autograd.Function):
    """Same energy; the forces go back to the nodes through one fancy-indexed ``+=``."""

    bug = {"kind": "not_accumulated", "input": "pos",
           "note": "grad_pos[idx] += vals with repeated node ids keeps one contribution per node "
                   "instead of summing them (index_add_ is needed)"}

    @staticmethod
    def forward(ctx, pos, k, edges):
        i, j, d, length = _spring_geometry(pos, edges)
        ctx.save_for_backward(pos, k, edges)
        return 0.5 * k * (length - REST) ** 2

    @staticmethod
    def backward(ctx, grad_energy):
        pos, k, edges = ctx.saved_tensors
        i, j, d, length = _spring_geometry(pos, edges)
        coef = grad_energy * k * (1.0 - REST / length)
        f = coef.unsqueeze(1) * d
        idx = torch.cat([i, j])
        vals = torch.cat([f, -f])
        grad_pos = pos.new_zeros(pos.shape)
        grad_pos[idx] += vals  # BUG
        grad_k = 0.5 * grad_energy * (length - REST) ** 2
        return grad_pos, grad_k, None

    example_inputs = staticmethod(_spring_inputs)


class UnheardSpringEnergyEdgeLoop(torch.autograd.Function):
    """Same energy, backward by a Python loop over the edges."""

    bug = {"kind": "missing_term", "input": "pos",
           "note": "each edge pushes on its first node only; the reaction -f on the second node "
                   "is never added"}

    @staticmethod
    def forward(ctx, pos, k, edges):
        i, j, d, length = _spring_geometry(pos, edges)
        ctx.save_for_backward(pos, k, edges)
        return 0.5 * k * (length - REST) ** 2

    @staticmethod
    def backward(ctx, grad_energy):
        pos, k, edges = ctx.saved_tensors
        grad_pos = torch.zeros_like(pos)
        grad_k = torch.zeros_like(k)
        for e in range(edges.shape[0]):
            a, b = int(edges[e, 0]), int(edges[e, 1])
            delta = pos[a] - pos[b]
            r = torch.linalg.norm(delta)
            grad_pos[a] += grad_energy[e] * k[e] * (r - REST) * delta / r  # BUG
            grad_k[e] = 0.5 * grad_energy[e] * (r - REST) ** 2
        return grad_pos, grad_k, None

    example_inputs = staticmethod(_spring_inputs)


class UnheardSpringEnergyStiffnessDoubled(torch.autograd.Function):
    """Same energy; the geometry is kept on ctx for backward."""

    bug = {"kind": "scale", "input": "k",
           "note": "dE/dk of 0.5 k s^2 written as s^2: the one-half is dropped"}

    @staticmethod
    def forward(ctx, pos, k, edges):
        i, j, d, length = _spring_geometry(pos, edges)
        ctx.i, ctx.j = i, j
        ctx.d, ctx.length = d, length
        ctx.n_nodes = pos.shape[0]
        ctx.save_for_backward(k)
        return 0.5 * k * (length - REST) ** 2

    @staticmethod
    def backward(ctx, grad_energy):
        (k,) = ctx.saved_tensors
        stretch = ctx.length - REST
        grad_k = grad_energy * stretch * stretch  # BUG
        f = (grad_energy * k * stretch / ctx.length)[:, None] * ctx.d
        grad_pos = f.new_zeros(ctx.n_nodes, f.shape[1])
        grad_pos.index_add_(0, ctx.i, f).index_add_(0, ctx.j, -f)
        return grad_pos, grad_k, None

    example_inputs = staticmethod(_spring_inputs)


# ------------------------------------------------------------------------------------ Coulomb
def _coulomb_inputs():
    g = torch.Generator().manual_seed(12)
    q = torch.randn(5, dtype=torch.float64, generator=g)
    x = torch.randn(5, 3, dtype=torch.float64, generator=g)
    return q, x


def _pair_table(x):
    diff = x[:, None, :] - x[None, :, :]
    r2 = (diff ** 2).sum(-1) + SOFT ** 2
    off = 1.0 - torch.eye(x.shape[0], dtype=x.dtype)
    return diff, r2.rsqrt() * off


class UnheardCoulombSoftened(torch.autograd.Function):
    """Potential of each charge, U_i = q_i sum_{j != i} q_j / sqrt(|x_i - x_j|^2 + s^2)."""

    bug = None

    @staticmethod
    def forward(ctx, q, x):
        _, inv = _pair_table(x)
        ctx.save_for_backward(q, x)
        return q * (inv @ q)

    @staticmethod
    def backward(ctx, grad_u):
        q, x = ctx.saved_tensors
        diff, inv = _pair_table(x)
        grad_q = grad_u * (inv @ q) + inv @ (grad_u * q)
        w = q[:, None] * q[None, :] * inv ** 3
        a = (grad_u[:, None] + grad_u[None, :]) * w
        grad_x = -(a[:, :, None] * diff).sum(1)
        return grad_q, grad_x

    example_inputs = staticmethod(_coulomb_inputs)


class UnheardCoulombSoftenedOwnChargeOnly(torch.autograd.Function):
    """Same potential; the charge gradient by einsum."""

    bug = {"kind": "missing_term", "input": "q",
           "note": "only dU_i/dq_i is kept; q_k also enters every other U_i through q_j, the "
                   "term inv @ (g * q) is missing"}

    @staticmethod
    def forward(ctx, q, x):
        _, inv = _pair_table(x)
        ctx.save_for_backward(q, x, inv)
        return q * (inv @ q)

    @staticmethod
    def backward(ctx, grad_u):
        q, x, inv = ctx.saved_tensors
        grad_q = torch.einsum("ij,j->i", inv, q) * grad_u  # BUG
        diff = x[:, None, :] - x[None, :, :]
        coupling = (grad_u[:, None] + grad_u[None, :]) * torch.outer(q, q) * inv.pow(3)
        grad_x = -torch.einsum("ij,ijd->id", coupling, diff)
        return grad_q, grad_x

    example_inputs = staticmethod(_coulomb_inputs)


class UnheardCoulombSoftenedPullPush(torch.autograd.Function):
    """Same potential; the position gradient split into a 'push' and a 'pull' matrix product."""

    bug = {"kind": "term_sign", "input": "x",
           "note": "sum_j A_kj (x_k - x_j) expanded as rowsum(A) x + A x: the A @ x term needs a "
                   "minus sign"}

    @staticmethod
    def forward(ctx, q, x):
        _, inv = _pair_table(x)
        ctx.save_for_backward(q, x)
        return q * (inv @ q)

    @staticmethod
    def backward(ctx, grad_u):
        q, x = ctx.saved_tensors
        _, inv = _pair_table(x)
        grad_q = grad_u * (inv @ q) + inv @ (grad_u * q)
        a = (grad_u[:, None] + grad_u[None, :]) * (q[:, None] * q[None, :]) * inv ** 3
        push = a.sum(1, keepdim=True) * x
        pull = a @ x
        grad_x = -(push + pull)  # BUG
        return grad_q, grad_x

    example_inputs = staticmethod(_coulomb_inputs)


# ------------------------------------------------------------------------------- Euler step
def _euler_inputs():
    g = torch.Generator().manual_seed(13)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g)
    v = torch.randn(3, 4, dtype=torch.float64, generator=g)
    omega = torch.rand(4, dtype=torch.float64, generator=g) + 0.5
    return x, v, omega


class UnheardEulerDampedOscillator(torch.autograd.Function):
    """One explicit Euler step of x'' = -omega^2 x - c x'; returns (x_new, v_new)."""

    bug = None

    @staticmethod
    def forward(ctx, x, v, omega):
        ctx.save_for_backward(x, omega)
        x_new = x + DT * v
        v_new = v - DT * (omega ** 2 * x + DAMP * v)
        return x_new, v_new

    @staticmethod
    def backward(ctx, grad_x_new, grad_v_new):
        x, omega = ctx.saved_tensors
        grad_x = grad_v = grad_omega = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_x_new - DT * omega ** 2 * grad_v_new
        if ctx.needs_input_grad[1]:
            grad_v = DT * grad_x_new + (1.0 - DT * DAMP) * grad_v_new
        if ctx.needs_input_grad[2]:
            grad_omega = (-2.0 * DT * omega * x * grad_v_new).sum(0)
        return grad_x, grad_v, grad_omega

    example_inputs = staticmethod(_euler_inputs)


class UnheardEulerDampedOscillatorFixedOmega(torch.autograd.Function):
    """Same step; its author treated the frequency as a fixed hyper-parameter."""

    bug = {"kind": "zero", "input": "omega",
           "note": "omega is a tensor input that needs a gradient, but backward returns None "
                   "for it"}

    @staticmethod
    def forward(ctx, x, v, omega):
        ctx.omega_sq = omega ** 2
        return x + DT * v, (1.0 - DT * DAMP) * v - DT * ctx.omega_sq * x

    @staticmethod
    def backward(ctx, grad_x_new, grad_v_new):
        jac_vx = -DT * ctx.omega_sq
        grad_x = grad_x_new + jac_vx * grad_v_new
        grad_v = DT * grad_x_new + (1.0 - DT * DAMP) * grad_v_new
        grad_omega = None  # BUG
        return grad_x, grad_v, grad_omega

    example_inputs = staticmethod(_euler_inputs)


# --------------------------------------------------------------------------------- RK2 step
def _rk2_inputs():
    g = torch.Generator().manual_seed(14)
    y = torch.randn(3, 4, dtype=torch.float64, generator=g) * 1.5
    a = torch.randn(3, 4, dtype=torch.float64, generator=g)
    return y, a


class UnheardMidpointStep(torch.autograd.Function):
    """One midpoint (RK2) step of y' = a sin(y)."""

    bug = None

    @staticmethod
    def forward(ctx, y, a):
        k1 = a * torch.sin(y)
        y_mid = y + 0.5 * H * k1
        ctx.save_for_backward(y, a, y_mid)
        return y + H * a * torch.sin(y_mid)

    @staticmethod
    def backward(ctx, grad_out):
        y, a, y_mid = ctx.saved_tensors
        outer = H * a * torch.cos(y_mid)          # d y_new / d y_mid
        dmid_dy = 1.0 + 0.5 * H * a * torch.cos(y)
        dmid_da = 0.5 * H * torch.sin(y)
        grad_y = grad_out * (1.0 + outer * dmid_dy)
        grad_a = grad_out * (H * torch.sin(y_mid) + outer * dmid_da)
        return grad_y, grad_a


class UnheardMidpointStepSlopeAtStart(torch.autograd.Function):
    """Same step, backward written stage by stage."""

    bug = {"kind": "wrong_variable", "input": "y",
           "note": "the second stage's slope derivative a cos(.) is taken at y instead of at the "
                   "midpoint y_mid"}

    @staticmethod
    def forward(ctx, y, a):
        y_mid = y + 0.5 * H * a * torch.sin(y)
        ctx.save_for_backward(y, a, y_mid)
        return y + H * a * torch.sin(y_mid)

    @staticmethod
    def backward(ctx, grad_out):
        y, a, y_mid = ctx.saved_tensors
        # stage 1: y_mid = y + H/2 * f(y)
        dmid_dy = 1.0 + 0.5 * H * a * torch.cos(y)
        # stage 2: y_new = y + H * f(y_mid)
        slope_mid = a * torch.cos(y)  # BUG
        grad_y = grad_out * (1.0 + H * slope_mid * dmid_dy)
        grad_a = grad_out * H * (torch.sin(y_mid) + a * torch.cos(y_mid) * 0.5 * H * torch.sin(y))
        return grad_y, grad_a


class UnheardMidpointStepDirectOnly(torch.autograd.Function):
    """Same step; the coefficient gradient written in one line."""

    bug = {"kind": "missing_term", "input": "a",
           "note": "only the explicit a of the second stage is differentiated; a also moves "
                   "y_mid, the chain term H a cos(y_mid) * H/2 sin(y) is missing"}

    @staticmethod
    def forward(ctx, y, a):
        y_mid = y + 0.5 * H * a * torch.sin(y)
        ctx.save_for_backward(y, a, y_mid)
        return y + H * a * torch.sin(y_mid)

    @staticmethod
    def backward(ctx, grad_out):
        y, a, y_mid = ctx.saved_tensors
        c_mid = torch.cos(y_mid)
        grad_y = grad_out * (1.0 + H * a * c_mid * (1.0 + 0.5 * H * a * torch.cos(y)))
        grad_a = grad_out * H * torch.sin(y_mid)  # BUG
        return grad_y, grad_a


# ------------------------------------------------------------------------- two-link arm
def _arm_inputs():
    g = torch.Generator().manual_seed(15)
    return (torch.rand(3, 4, dtype=torch.float64, generator=g) * 6 - 3,
            torch.rand(3, 4, dtype=torch.float64, generator=g) * 6 - 3)


def _arm_trig(theta1, theta2):
    t12 = theta1 + theta2
    return torch.sin(theta1), torch.cos(theta1), torch.sin(t12), torch.cos(t12)


class UnheardTwoLinkTip(torch.autograd.Function):
    """Tip of a planar two-link arm: (x, y) from the shoulder and elbow angles."""

    bug = None

    @staticmethod
    def forward(ctx, theta1, theta2):
        ctx.save_for_backward(theta1, theta2)
        s1, c1, s12, c12 = _arm_trig(theta1, theta2)
        return L1 * c1 + L2 * c12, L1 * s1 + L2 * s12

    @staticmethod
    def backward(ctx, grad_x, grad_y):
        theta1, theta2 = ctx.saved_tensors
        s1, c1, s12, c12 = _arm_trig(theta1, theta2)
        elbow = grad_x * (-L2 * s12) + grad_y * (L2 * c12)
        shoulder = grad_x * (-L1 * s1) + grad_y * (L1 * c1) + elbow
        return shoulder, elbow

    example_inputs = staticmethod(_arm_inputs)


class UnheardTwoLinkTipElbowCosine(torch.autograd.Function):
    """Same arm; the elbow Jacobian written out entry by entry."""

    bug = {"kind": "term_sign", "input": "theta2",
           "note": "d x / d theta2 = -L2 sin(t1 + t2) is written +L2 sin(t1 + t2)"}

    @staticmethod
    def forward(ctx, theta1, theta2):
        ctx.save_for_backward(theta1, theta2)
        s1, c1, s12, c12 = _arm_trig(theta1, theta2)
        return L1 * c1 + L2 * c12, L1 * s1 + L2 * s12

    @staticmethod
    def backward(ctx, grad_x, grad_y):
        theta1, theta2 = ctx.saved_tensors
        s1, c1, s12, c12 = _arm_trig(theta1, theta2)
        dx_dt1, dy_dt1 = -L1 * s1 - L2 * s12, L1 * c1 + L2 * c12
        dx_dt2 = L2 * s12  # BUG
        dy_dt2 = L2 * c12
        return (grad_x * dx_dt1 + grad_y * dy_dt1,
                grad_x * dx_dt2 + grad_y * dy_dt2)

    example_inputs = staticmethod(_arm_inputs)


class UnheardTwoLinkTipJacobianDict(torch.autograd.Function):
    """Same arm; the Jacobian columns kept in a dict keyed by joint."""

    bug = {"kind": "swapped", "input": "theta1",
           "note": "the shoulder and elbow gradients are returned in each other's place"}

    @staticmethod
    def forward(ctx, theta1, theta2):
        ctx.save_for_backward(theta1, theta2)
        s1, c1, s12, c12 = _arm_trig(theta1, theta2)
        return L1 * c1 + L2 * c12, L1 * s1 + L2 * s12

    @staticmethod
    def backward(ctx, grad_x, grad_y):
        theta1, theta2 = ctx.saved_tensors
        s1, c1, s12, c12 = _arm_trig(theta1, theta2)
        jac = {
            "shoulder": (-L1 * s1 - L2 * s12, L1 * c1 + L2 * c12),
            "elbow": (-L2 * s12, L2 * c12),
        }
        grads = {joint: grad_x * col[0] + grad_y * col[1] for joint, col in jac.items()}
        return grads["elbow"], grads["shoulder"]  # BUG

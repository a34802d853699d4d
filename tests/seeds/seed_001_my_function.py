import gradcli as torch
from gradcli.autograd import Function

class MyFunction(Function):
    @staticmethod
    def forward(ctx, x):
        # 在forward中，我们可以使用任何PyTorch操作
        output = x * 2
        # 我们可以使用ctx.save_for_backward方法保存需要在backward中使用的中间结果
        ctx.save_for_backward(x)
        # 返回我们的输出
        return output

    @staticmethod
    def backward(ctx, grad_output):
        # 在backward中，我们接收一个grad_output参数，该参数是一个形状与函数输出相同的张量，表示该函数对输出的梯度
        # 我们可以使用ctx.saved_tensors方法获取在forward中保存的中间结果
        x, = ctx.saved_tensors
        # 计算函数对输入的梯度
        grad_x = grad_output * 2
        # 返回我们的输入梯度
        return grad_x

# 使用我们的自定义函数
x = torch.randn(3, requires_grad=True)
output = MyFunction.apply(x)
output.backward(torch.ones_like(output))
print(x.grad)

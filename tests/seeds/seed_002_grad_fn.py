import gradcli as torch
import numpy as np
class sqrt_and_inverse(torch.autograd.Function):
    def forward(self, input_x,input_y):
        self.save_for_backward(input_x,input_y)
        output=torch.sqrt(input_x)+torch.reciprocal(input_x)+2*torch.pow(input_y,2)
        return output
    def backward(self, grad_output):
        input_x,input_y=self.saved_tensors
        grad_x = grad_output *(torch.reciprocal(2*torch.sqrt(input_x))-torch.reciprocal(torch.pow(input_x,2)))
        grad_y= grad_output *(4*input_y)
        return grad_x,grad_y
def sqrt_and_inverse_func(input_x,input_y):
    return sqrt_and_inverse()(input_x,input_y)
x=torch.tensor(3.0,requires_grad=True)
y=torch.tensor(2.0,requires_grad=True)
print('开始前向传播')
z=sqrt_and_inverse_func(x,y)
print(z)
print(z.grad_fn)
'''运行结果为：
开始前向传播
tensor(10.0654, grad_fn=<sqrt_and_inverse>)
<__main__.sqrt_and_inverse object at 0x000002AD04C75848>
'''
import gradcli as torch
x = torch.tensor(torch.ones(2,2),requires_grad=True)
y=x+2
print(x.grad_fn) # 返回 None
print(y.grad_fn) # 返回 <AddBackward object at 0x000001F2E56D28D0> 表示是由Add加法创造得到的Y

import gradcli as torch
import numpy as np
class sqrt_and_inverse(torch.autograd.Function):
    def forward(self, input_x,input_y):
        self.save_for_backward(input_x,input_y)
        output=torch.sqrt(input_x)+torch.reciprocal(input_x)+2*torch.pow(input_y,2)
        return output
    def backward(self, grad_output):
        print("---------------------------------------------")
        print(f"grad_output is : {grad_output}")
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
print('开始反向传播')
gradient=torch.tensor(2.5)
z.backward(gradient) # 这里是标量对标量求导，注意这个参数一定要是一个tensor才行
print(x.grad)
print(y.grad)
'''运行结果为：
开始前向传播
开始反向传播
---------------------------------------------
grad_output is : 2.5 # 这个时候grad_output的值就是我传递进去的2.5了
tensor(0.4439) # 原来的 0.1776*2.5=0.4439
tensor(20.) # 原来的 8.0*2.5=20.0
'''

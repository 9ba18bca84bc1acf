x = 1
y = 2

x = 1
y = 3

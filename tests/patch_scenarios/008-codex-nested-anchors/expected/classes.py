class A:
    def run(self):
        return 'a'


class B:
    def run(self):
        return 'b'

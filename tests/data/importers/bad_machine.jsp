# machine 2 does not exist
2 2
0 3 1 2
1 2 2 4

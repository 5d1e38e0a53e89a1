# tiny 2x2 job shop
# job 0: m0 for 3 then m1 for 2; job 1: m1 for 2 then m0 for 4
2 2
0 3 1 2
1 2 0 4

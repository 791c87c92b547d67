#!/bin/sh
#SBATCH --gres=gpu:a100:2 --mem=4000 -c 4 -N 1 -J 'my job'
#SBATCH -t 1-02:30:00 -o out-%A_%a.txt --error=err.txt -a 1-9:2,20%3
#SBATCH --partition=big --chdir=/tmp --nodes=1 --gpus=h100:1
#GMUX --mode exclusive --burst --allow "example.com:443" --time 90s
echo hi

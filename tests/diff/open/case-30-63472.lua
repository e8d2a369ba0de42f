-- mismatch: grad c17 | einsum masked_fill maximum sdpa_causal_mask_gqa select var
-- ops: masked_fill einsum maximum var select sdpa_causal_mask_gqa
local P = {}
P[63472] = function()
  local c1 = tt.tensor({-0.6412749886512756,0.07982072234153748,-1.3826985359191895,-0.5710722208023071,1.7321557998657227,-0.448691725730896,0.5,1.2563385963439941,-0.26600033044815063,-0.31042659282684326,2.193967580795288,0.37819704413414,0.0}):requires_grad_()
  local c3 = tt.tensor({-0.5513646602630615,0.7201890349388123,-1.1322342157363892,0.9133141040802002,0.341164231300354,1.0,0.0,2.0153281688690186,0.245744526386261,2.3092238903045654,-0.894697368144989,-1.5386266708374023,1.5925184488296509})
  local c5 = tt.tensor({1.7250028848648071,1.219049096107483,0.0,-0.8723536729812622,0.4808615446090698,0.7662487626075745,0.32848846912384033,0.7170293927192688,1.8011832237243652,-1.4656256437301636,0.20086658000946045,-0.19728295505046844,2.0968856811523438}):reshape({13,1}):requires_grad_()
  local c7 = tt.tensor({-0.05731673911213875,0.6652234792709351,0.42070525884628296,-0.13148531317710876,0.5246585607528687,1.0,-0.5565410256385803,-0.30539241433143616,-1.0131211280822754,-0.8183147311210632,-1.0575357675552368,-0.8845473527908325,0.5,0.06929207593202591,0.37137842178344727,0.5596095323562622}):requires_grad_()
  local c13 = tt.tensor({0.8052381277084351,0.0,-0.19729533791542053,0.19136035442352295}):reshape({1,4,1,1}):requires_grad_()
  local c15 = tt.tensor({0.5973175168037415}):reshape({1,1,1,1}):requires_grad_()
  local c17 = tt.tensor({-1.037018060684204,-0.16921983659267426,0.5396425724029541}):reshape({1,1,3,1}):requires_grad_()
  local m19 = tt.tensor({false,true,false,true,false,true,true,true,false,true,true,true}, "bool"):reshape({4,1,3})
  local c21 = tt.tensor({-1.0116803646087646,0.3391800820827484,2.063493013381958,0.26685255765914917}):reshape({1,4,1,1})
  local m4 = c3:gt(0.3)
  local v2 = c1:masked_fill(m4, 10000.0)
  local v6 = tt.einsum("a, a b -> a", v2, c5)
  local v8 = c7:narrow(1, 1, 13)
  local v9 = v6:maximum(v8)
  local v10 = v9:var(-1, true)
  local v11 = v10[1]
  local v14 = c13 + v11
  local v16 = c15:expand(1, 1, 3, 1)
  local v18 = c17:permute(4, 2, 3, 1)
  local v20 = tt.sdpa(v14, v16, v18, {causal = true, mask = m19})
  local loss = (v20 * c21):sum()
  loss:backward()
  return loss, {c1.grad or false, c5.grad or false, c7.grad or false, c13.grad or false, c15.grad or false, c17.grad or false}, {}
end
local loss, g, aux = P[63472]()
print(loss)
for i, t in ipairs(g) do print('grad', i, t) end
for i, t in ipairs(aux) do print('aux', i, t) end
